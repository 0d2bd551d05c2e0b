package stratacli_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/cmd/strata/stratacli"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

type Host struct {
	Name string `json:"name"`
	Zone string `json:"zone"`
}

var (
	hostByName = strata.Index[*Host, string]{
		Name:       "name",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	hostByZone = strata.Index[*Host, string]{
		Name:       "zone",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
	}
)

// An application adds the command tree to its own binary, with its
// tables' types, codecs and indexes: the tree then shows its objects as
// columns and queries them on any index, keys typed as text.
func ExampleNewCommand() {
	dir, err := os.MkdirTemp("", "stratacli-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	writeHosts(dir) // the application's own work

	root := &cobra.Command{Use: "myapp"}
	root.AddCommand(stratacli.NewCommand(
		stratacli.WithName("debug"),
		stratacli.WithTable("hosts", persist.JSON[*Host](), hostByName, hostByZone),
	))
	// As "myapp debug dump hosts --dir DIR --index zone --get eu" would.
	code := stratacli.Run(context.Background(), root, []string{"debug", "dump", "hosts", "--dir", dir, "--index", "zone", "--get", "eu"})
	fmt.Println("exit", code)
	// Output:
	// KEY  REVISION  NAME  ZONE
	// a1   1         a1    eu
	// c1   3         c1    eu
	// exit 0
}

// writeHosts writes three hosts into a store in dir.
func writeHosts(dir string) {
	store, err := persist.Open(dir, persist.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	if err := store.Register(persist.Table(hosts, persist.JSON[*Host]())); err != nil {
		log.Fatal(err)
	}
	txn := db.WriteTxn(hosts)
	for _, h := range []*Host{{"a1", "eu"}, {"b1", "us"}, {"c1", "eu"}} {
		if _, _, err := hosts.Insert(txn, h); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		log.Fatal(err)
	}
}
