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
	"github.com/strata-db/strata/internal/columns"
	"github.com/strata-db/strata/internal/wirejson"
)

// The web inspector (Options.UI): pages rendered by html/template from
// the embedded files under ui/, which work without JavaScript (a table's
// filter is a form, links page through it), and a small script,
// ui/static/app.js, that makes them live: the overview's counts, plots
// and Cluster panel refresh (the panel is on the page only with
// Options.Cluster, hidden until /v1/cluster answers), a table's rows open
// on their JSON when clicked and follow its change stream, an object's
// view follows the object with blocking reads. The table page is
// ui_table.go's.
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
	funcs := template.FuncMap{
		"ops": func() []uiOp { return uiOps },
		// span is the width of a table page's rows: key, revision, columns.
		"span": func(cols []string) int { return 2 + len(cols) },
	}
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

type row struct {
	Key      string
	RawKey   string // base64url of the primary key
	Revision strata.Revision
	JSON     string
	// Cells are the row's cells, one per column of its page
	// (tablePage.Columns); members is the object's, as rowOf read them,
	// and tableRow its TableRow, if it implements strata.TableWritable.
	Cells    []string
	members  []columns.Member
	tableRow []string
}

// rowOf renders o, read from the primary index or another, as a row.
func rowOf(t strata.AnyTable, primary bool, o strata.AnyObject, enc *wirejson.Encoder) row {
	obj := objectOf(t, primary, o, enc)
	r := row{Key: obj.Key, RawKey: encodeBase64(primaryKey(t, primary, o)), Revision: o.Revision, JSON: indentJSON(obj)}
	r.tableRow = t.TableRow(o.Object)
	// The columns of package columns, as the CLI's: an object's members,
	// or, for a value that is no JSON object, one column "object".
	if obj.Error == "" {
		r.members = columns.Members(obj.Object)
	}
	if r.members == nil {
		value := obj.Object
		if obj.Error != "" {
			value, _ = json.Marshal(r.JSON)
		}
		r.members = []columns.Member{{Name: "object", Value: value}}
	}
	return r
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
