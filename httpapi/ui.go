package httpapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/wirejson"
)

// The web inspector (Options.UI): pages rendered by html/template from
// the embedded files under ui/, which work without JavaScript (links page
// through a table), and a small script, ui/static/app.js, that makes them
// live: the overview's counts, plots and Cluster panel refresh (the panel
// is on the page only with Options.Cluster, hidden until /v1/cluster
// answers), a table's rows follow its change stream, an object's view
// follows the object with blocking reads.
// Every page is served with a Content-Security-Policy that allows only the
// handler's own script, styles and requests: no inline script, so object
// contents, which reach the page only as text, cannot run.

//go:embed ui
var uiFiles embed.FS

// contentSecurityPolicy is the CSP of every page of the inspector.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type ui struct {
	h      *Handler
	pages  map[string]*template.Template
	static fs.FS
}

func newUI(h *Handler) *ui {
	u := &ui{h: h, pages: map[string]*template.Template{}}
	u.static, _ = fs.Sub(uiFiles, "ui/static")
	funcs := template.FuncMap{"ops": func() []string { return uiOps }}
	for _, page := range []string{"overview", "table", "object", "error"} {
		u.pages[page] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(uiFiles, "ui/layout.html", "ui/"+page+".html"))
	}
	return u
}

func (u *ui) routes(mux *http.ServeMux, serve func(Access, endpoint) http.Handler) {
	mux.Handle("GET /ui", http.RedirectHandler("ui/", http.StatusMovedPermanently))
	mux.Handle("GET /ui/{$}", serve(AccessRead, u.overview))
	mux.Handle("GET /ui/table", serve(AccessRead, u.table))
	mux.Handle("GET /ui/object", serve(AccessRead, u.object))
	mux.Handle("GET /ui/static/{file}", serve(AccessRead, u.file))
	mux.Handle("GET /favicon.ico", serve(AccessRead, func(w http.ResponseWriter, r *http.Request, _ url.Values) error {
		r.URL.Path = "/favicon.svg"
		return u.serveFile(w, r, "favicon.svg")
	}))
}

func (u *ui) file(w http.ResponseWriter, r *http.Request, _ url.Values) error {
	return u.serveFile(w, r, r.PathValue("file"))
}

func (u *ui) serveFile(w http.ResponseWriter, r *http.Request, name string) error {
	if _, err := fs.Stat(u.static, name); err != nil {
		return fmt.Errorf("%w: %s", ErrNotFound, r.URL.Path)
	}
	setPageHeaders(w)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, u.static, name)
	return nil
}

func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// render serves a page. A page that fails to render is an error of ours.
func (u *ui) render(w http.ResponseWriter, status int, page string, data any) error {
	var buf bytes.Buffer
	if err := u.pages[page].Execute(&buf, data); err != nil {
		return fmt.Errorf("%w: rendering %s: %v", ErrInternal, page, err)
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	return nil
}

// renderError serves the error page for err, with its problem's status.
func (u *ui) renderError(w http.ResponseWriter, err error) error {
	p := ProblemOf(err)
	return u.render(w, p.Status, "error", struct {
		Title   string
		Problem Problem
	}{"Error", p})
}

type overviewPage struct {
	Title    string
	Instance string
	Commits  uint64
	Tables   []TableInfo
	// Cluster: the page has the Cluster panel (Options.Cluster is set),
	// which the script fills from /v1/cluster and shows once it answers.
	Cluster bool
}

func (u *ui) overview(w http.ResponseWriter, r *http.Request, _ url.Values) error {
	txn := u.h.db.ReadTxn()
	return u.render(w, http.StatusOK, "overview", overviewPage{
		Title:    "Overview",
		Instance: u.h.instance,
		Commits:  u.h.db.Commits(),
		Tables:   u.h.tableInfos(txn),
		Cluster:  u.h.opts.Cluster != nil,
	})
}

type tablePage struct {
	Title string
	Info  TableInfo
	// The query, as the form holds it.
	Index, Op, Key, To string
	Raw                bool
	Limit              int
	// Revision is the table's revision in the snapshot shown.
	Revision strata.Revision
	Rows     []row
	// Next is the link to the next page ("" on the last).
	Next template.URL
	// First is the link to the first page, if this is not it.
	First template.URL
	// Live: the rows follow the change stream (the view's whole table:
	// new objects are shown too).
	AllObjects bool
}

type row struct {
	Key      string
	RawKey   string // base64url of the primary key
	Revision strata.Revision
	JSON     string
}

var uiOps = []string{"all", "key", "prefix", "lowerbound", "range"}

func (u *ui) table(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := u.h.db.AnyTable(vals.Get("table"))
	if err != nil {
		return u.renderError(w, err)
	}
	// Live mode streams the changes from the revision of the page: start
	// the table's ring (if it is not running) before the page's snapshot
	// is taken, so that the ring covers it for RingRetention.
	if hb, err := u.h.attach(t); err == nil {
		u.h.detach(hb)
	}
	txn := u.h.db.ReadTxn()
	p := tablePage{
		Title: t.Name(),
		Info:  tableInfo(txn, t),
		Index: vals.Get("index"),
		Op:    vals.Get("op"),
		Key:   vals.Get("key"),
		To:    vals.Get("to"),
		Limit: 50,
	}
	if p.Op == "" {
		p.Op = "all"
	}
	p.Raw, _ = strconv.ParseBool(vals.Get("raw"))
	if s := vals.Get("limit"); s != "" {
		if p.Limit, err = strconv.Atoi(s); err != nil || p.Limit <= 0 || p.Limit > 10000 {
			return u.renderError(w, fmt.Errorf("%w: limit=%q: want 1 to 10000", ErrBadRequest, s))
		}
	}
	// The form's query, in the API's terms.
	api := url.Values{}
	if p.Index != "" {
		api.Set("index", p.Index)
	}
	switch p.Op {
	case "all":
	case "key", "prefix", "lowerbound":
		api.Set(p.Op, p.Key)
	case "range":
		api.Set("from", p.Key)
		api.Set("to", p.To)
	default:
		return u.renderError(w, fmt.Errorf("%w: op=%q: want one of %v", ErrBadRequest, p.Op, uiOps))
	}
	if p.Raw {
		api.Set("raw", "1")
	}
	api.Set("limit", strconv.Itoa(p.Limit))
	if after := vals.Get("after"); after != "" {
		api.Set("after", after)
	}
	req, err := u.h.parseRead(api, t, false)
	if err != nil {
		return u.renderError(w, err)
	}
	seq, err := t.Read(txn, req.q)
	if err != nil {
		return u.renderError(w, err)
	}
	p.Revision = t.Revision(txn)
	p.AllObjects = p.Op == "all"
	primary := isPrimary(t, req.q.Index)
	enc := wirejson.NewEncoder()
	var last []byte
	for o := range seq {
		if len(p.Rows) == p.Limit {
			next := cloneValues(vals)
			next.Set("after", encodeBase64(last))
			p.Next = template.URL("table?" + next.Encode())
			break
		}
		p.Rows = append(p.Rows, rowOf(t, primary, o, enc))
		last = o.Cursor
	}
	if vals.Has("after") {
		first := cloneValues(vals)
		first.Del("after")
		p.First = template.URL("table?" + first.Encode())
	}
	return u.render(w, http.StatusOK, "table", p)
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// rowOf renders o, read from the primary index or another, as a row.
func rowOf(t strata.AnyTable, primary bool, o strata.AnyObject, enc *wirejson.Encoder) row {
	obj := objectOf(t, primary, o, enc)
	return row{Key: obj.Key, RawKey: encodeBase64(primaryKey(t, primary, o)), Revision: o.Revision, JSON: indentJSON(obj)}
}

func indentJSON(obj Object) string {
	if obj.Error != "" {
		return "(cannot be shown: " + obj.Error + ")"
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, obj.Object, "", "  "); err != nil {
		return string(obj.Object)
	}
	return buf.String()
}

type objectPage struct {
	Title    string
	Table    string
	Key      string // as the query gave it
	Raw      bool
	Revision strata.Revision // the table's
	Row      row
	Found    bool
	// API is the query string of the object's API endpoint.
	API string
}

func (u *ui) object(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := u.h.db.AnyTable(vals.Get("table"))
	if err != nil {
		return u.renderError(w, err)
	}
	if !vals.Has("key") {
		return u.renderError(w, fmt.Errorf("%w: key is required", ErrBadRequest))
	}
	p := objectPage{Title: t.Name() + " " + vals.Get("key"), Table: t.Name(), Key: vals.Get("key")}
	p.Raw, _ = strconv.ParseBool(vals.Get("raw"))
	api := url.Values{"key": {p.Key}}
	if p.Raw {
		api.Set("raw", "1")
	}
	req, err := u.h.parseRead(api, t, true)
	if err != nil {
		return u.renderError(w, err)
	}
	p.API = api.Encode()
	txn := u.h.db.ReadTxn()
	seq, err := t.Read(txn, req.q)
	if err != nil {
		return u.renderError(w, err)
	}
	p.Revision = t.Revision(txn)
	for o := range seq {
		p.Row, p.Found = rowOf(t, true, o, wirejson.NewEncoder()), true
	}
	status := http.StatusOK
	if !p.Found {
		status = http.StatusNotFound
	}
	return u.render(w, status, "object", p)
}
