package stratahive_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/stratahive"
)

// Session is the expiring table's object.
type Session struct {
	ID      uint64
	Expires time.Time
}

var (
	sessionByID = strata.Index[*Session, uint64]{
		Name:       "id",
		FromObject: func(s *Session) index.KeySet { return index.KeySetOf(index.Uint64(s.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	sessionByExpiry = strata.ExpiryIndex[*Session]{
		Name:       "expires",
		FromObject: func(s *Session) time.Time { return s.Expires },
	}
)

// expiryApp is what the expiry tests take from their hive.
type expiryApp struct {
	health   *cell.SimpleHealth
	db       *strata.DB
	sessions strata.RWTable[*Session]
}

// expiryHive is a hive with a sessions table and the Expirer cell; app is
// filled when the hive is populated.
func expiryHive(opts strata.ExpirerOptions) (*hive.Hive, *expiryApp) {
	app := &expiryApp{}
	h := hive.New(
		stratahive.Cell,
		job.Cell,
		cell.Provide(func() (cell.Health, *cell.SimpleHealth) {
			h, sh := cell.NewSimpleHealth()
			app.health = sh
			return h, sh
		}),
		cell.Module("app", "The test application",
			stratahive.Table("sessions", sessionByID, sessionByExpiry),
			cell.Provide(job.Registry.NewGroup),
			stratahive.Expirer(opts),
		),
		cell.Invoke(func(db *strata.DB, t strata.RWTable[*Session]) { app.db, app.sessions = db, t }),
	)
	return h, app
}

// expiryHealth returns the Expirer job's health: its level, message and
// error.
func expiryHealth(app *expiryApp) string {
	h := app.health.GetChild("job-" + stratahive.ExpirerJobName)
	if h == nil {
		return "none"
	}
	h.Lock()
	defer h.Unlock()
	return fmt.Sprintf("%s %s %v", h.Level, h.Status, h.Error)
}

// TestExpirerCell: the Expirer cell runs from the hive's start to its
// stop, deletes each session at its expiry under synctest's clock, and
// reports its health.
func TestExpirerCell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, app := expiryHive(strata.ExpirerOptions{Batch: 2})
		log := hivetest.Logger(t)
		if err := h.Start(log, t.Context()); err != nil {
			t.Fatal(err)
		}
		txn := app.db.WriteTxn(app.sessions)
		for i := range uint64(5) {
			if _, _, err := app.sessions.Insert(txn, &Session{ID: i, Expires: time.Now().Add(time.Duration(i+1) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if n := app.sessions.NumObjects(app.db.ReadTxn()); n != 2 {
			t.Fatalf("after 3 minutes: %d sessions, want 2", n)
		}
		if got := expiryHealth(app); got != "OK OK, 3 object(s) expired <nil>" {
			t.Fatalf("health %q", got)
		}
		if err := h.Stop(log, context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		if n := app.sessions.NumObjects(app.db.ReadTxn()); n != 2 {
			t.Fatalf("after the hive stopped: %d sessions, want 2", n)
		}
	})
}

// TestExpirerCellBadOptions: bad options fail the hive's construction
// with strata.NewExpirer's error.
func TestExpirerCellBadOptions(t *testing.T) {
	h, _ := expiryHive(strata.ExpirerOptions{Batch: -1})
	err := h.Populate(hivetest.Logger(t))
	if !errors.Is(err, strata.ErrExpiryBatch) || !strings.Contains(err.Error(), "batch -1") {
		t.Fatalf("Populate: %v, want ErrExpiryBatch", err)
	}
}
