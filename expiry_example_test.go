package strata_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Session is the examples' object that expires.
type Session struct {
	ID      uint64
	User    string
	Expires time.Time // the zero time: never
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

// Objects that expire: an ExpiryIndex beside the table's other indexes,
// reads of it in time order, and ExpireBefore deleting what is due at a
// given time in committed batches. A write of an object already expired
// is refused.
func ExampleExpiryIndex() {
	db := strata.New()
	sessions := strata.MustNewTable(db, "sessions", sessionByID, sessionByExpiry)

	now := time.Now()
	wtxn := db.WriteTxn(sessions)
	for _, s := range []*Session{
		{ID: 1, User: "ann", Expires: now.Add(time.Hour)},
		{ID: 2, User: "bob", Expires: now.Add(time.Minute)},
		{ID: 3, User: "cat"}, // never expires
	} {
		if _, _, err := sessions.Insert(wtxn, s); err != nil {
			panic(err)
		}
	}
	_, _, err := sessions.Insert(wtxn, &Session{ID: 4, Expires: now.Add(-time.Second)})
	fmt.Println("expired insert refused:", errors.Is(err, strata.ErrExpired))
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}

	// The index reads in time order; the zero time is not in it.
	for s := range sessions.LowerBound(rtxn, sessionByExpiry.Query(now)) {
		fmt.Println("expires:", s.User)
	}
	due, _ := strata.CountRange(rtxn, sessions, sessionByExpiry.Query(time.Time{}), sessionByExpiry.Query(now.Add(2*time.Minute)))
	fmt.Println("due within two minutes:", due)

	// Two minutes on: what is due goes, in batches of at most 100.
	n, err := strata.ExpireBefore(db, now.Add(2*time.Minute), 100)
	if err != nil {
		panic(err)
	}
	fmt.Println("expired:", n)
	for s := range sessions.All(db.ReadTxn()) {
		fmt.Println("left:", s.User)
	}
	// Output:
	// expired insert refused: true
	// expires: bob
	// expires: ann
	// due within two minutes: 1
	// expired: 1
	// left: ann
	// left: cat
}

// The Expirer deletes objects as they expire, in a goroutine of its own
// that sleeps until the soonest expiry; a watch channel tells a reader.
func ExampleExpirer() {
	db := strata.New()
	sessions := strata.MustNewTable(db, "sessions", sessionByID, sessionByExpiry)

	expirer, err := strata.NewExpirer(db, strata.ExpirerOptions{})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- expirer.Run(ctx) }()

	wtxn := db.WriteTxn(sessions)
	_, _, watch, err := sessions.InsertWatch(wtxn, &Session{ID: 1, User: "ann", Expires: time.Now().Add(10 * time.Millisecond)})
	if err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	<-watch // closes when the Expirer deletes the session
	fmt.Println("sessions left:", sessions.NumObjects(db.ReadTxn()))

	stop()
	fmt.Println("stopped:", errors.Is(<-done, context.Canceled), "expired:", expirer.Expired())
	// Output:
	// sessions left: 0
	// stopped: true expired: 1
}
