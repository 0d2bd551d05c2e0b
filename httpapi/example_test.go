package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
)

type Host struct {
	Name string
	Zone string
}

var hostByName = strata.Index[*Host, string]{
	Name:       "name",
	FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// An application mounts the handler on a listener of its own (here a
// test server) and reads a table over HTTP.
func Example() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName)
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{{"a1", "eu"}, {"a2", "eu"}, {"b1", "us"}} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}

	h := httpapi.New(db, httpapi.Options{})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/v1/tables/hosts/objects?prefix=a")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))

	resp, _ = http.Get(srv.URL + "/v1/tables/hosts/objects?index=zone")
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	resp.Body.Close()
	// Output:
	// {"table":"hosts","revision":3,"objects":[
	// {"rev":1,"key":"a1","obj":{"Name":"a1","Zone":"eu"}},
	// {"rev":2,"key":"a2","obj":{"Name":"a2","Zone":"eu"}}
	// ]}
	// 404 Not Found application/problem+json
}

// A change stream from revision 0 lists the table, bookmarks the
// revision listed, then follows the changes.
func Example_changes() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName)
	wtxn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{"a1", "eu"}); err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}

	h := httpapi.New(db, httpapi.Options{})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer srv.CloseClientConnections()

	resp, err := http.Get(srv.URL + "/v1/tables/hosts/changes?from=0")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		fmt.Println(lines.Text())
		if strings.Contains(lines.Text(), `"bookmark"`) {
			break
		}
	}
	wtxn = db.WriteTxn(hosts)
	if _, _, err := hosts.Delete(wtxn, &Host{Name: "a1"}); err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	lines.Scan()
	fmt.Println(lines.Text())
	// Output:
	// {"kind":"upsert","rev":1,"key":"a1","obj":{"Name":"a1","Zone":"eu"}}
	// {"kind":"bookmark","rev":1}
	// {"kind":"delete","rev":2,"key":"a1","obj":{"Name":"a1","Zone":"eu"}}
}
