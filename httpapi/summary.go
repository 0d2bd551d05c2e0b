package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/strata-db/strata"
)

// GET /v1/, /v1/tables and /v1/tables/{table}: what the database holds.

func (h *Handler) getSummary(w http.ResponseWriter, r *http.Request, _ url.Values) error {
	txn := h.db.ReadTxn()
	s := Summary{
		Instance: h.instance,
		Commits:  h.db.Commits(),
		Tables:   h.tableInfos(txn),
		Streams:  h.Stats(),
		Cluster:  h.opts.Cluster != nil,
	}
	return writeJSON(w, s)
}

func (h *Handler) getTables(w http.ResponseWriter, r *http.Request, _ url.Values) error {
	return writeJSON(w, h.tableInfos(h.db.ReadTxn()))
}

func (h *Handler) getTable(w http.ResponseWriter, r *http.Request, _ url.Values) error {
	t, err := h.table(r)
	if err != nil {
		return err
	}
	txn := h.db.ReadTxn()
	setRevision(w, t.Revision(txn))
	return writeJSON(w, tableInfo(txn, t))
}

// tableInfos describes the tables of the snapshot txn.
func (h *Handler) tableInfos(txn strata.ReadTxn) []TableInfo {
	metas := h.db.Tables()
	infos := make([]TableInfo, 0, len(metas))
	for _, m := range metas {
		infos = append(infos, tableInfo(txn, strata.AnyTable{Meta: m}))
	}
	return infos
}

func tableInfo(txn strata.ReadTxn, t strata.AnyTable) TableInfo {
	initialized, _ := t.Initialized(txn)
	feeds := t.FeedStats(txn)
	info := TableInfo{
		Name:        t.Name(),
		ObjectType:  t.ObjectType().String(),
		Objects:     t.NumObjects(txn),
		Revision:    t.Revision(txn),
		Initialized: initialized,
		ChangeFeeds: feeds.Feeds,
		Graveyard:   feeds.Graveyard,
		LastWriter:  t.Meta.LastWriter(txn),
	}
	if !initialized {
		info.PendingInitializers = t.PendingInitializers(txn)
	}
	for _, ix := range t.Indexes() {
		info.Indexes = append(info.Indexes, IndexInfo{
			Name:    ix.Name,
			Primary: ix.Primary,
			Unique:  ix.Unique,
			KeyType: ix.KeyType.String(),
			Text:    ix.Text,
		})
	}
	return info
}

// setRevision sets the Strata-Revision header: the table's revision in
// the snapshot a response was read from.
func setRevision(w http.ResponseWriter, rev strata.Revision) {
	w.Header().Set("Strata-Revision", strconv.FormatUint(rev, 10))
}

// writeJSON serves v as a JSON document. Its encoding cannot fail for the
// documents of this package; objects are encoded before (json.RawMessage).
func writeJSON(w http.ResponseWriter, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.Write(append(body, '\n'))
	return nil
}
