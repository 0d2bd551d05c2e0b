package part_test

import (
	"encoding/json"
	"fmt"

	"github.com/strata-db/strata/part"
)

// A Map of labels held by a stored object: each change makes a new version
// and leaves the old one as it was.
func ExampleMap() {
	var labels part.Map[string, string] // the zero Map is empty
	labels = labels.Set("app", "web").Set("tier", "frontend")

	next := labels.Set("env", "prod").Delete("tier")
	fmt.Println(labels)
	fmt.Println(next)

	env, found := next.Get("env")
	fmt.Println(env, found)

	data, _ := json.Marshal(struct{ Labels part.Map[string, string] }{next})
	fmt.Println(string(data))
	// Output:
	// map[app:web tier:frontend]
	// map[app:web env:prod]
	// prod true
	// {"Labels":{"app":"web","env":"prod"}}
}

// Integer keys iterate in numeric order, negative first, and are written to
// JSON as decimal strings.
func ExampleMap_integerKeys() {
	scores := part.FromMap(map[int]string{10: "ten", -3: "minus three", 2: "two"})
	for k, v := range scores.LowerBound(0) {
		fmt.Println(k, v)
	}
	data, _ := json.Marshal(scores)
	fmt.Println(string(data))
	// Output:
	// 2 two
	// 10 ten
	// {"-3":"minus three","2":"two","10":"ten"}
}

// A Set of tags, with a named element type.
func ExampleSet() {
	type Tag string
	tags := part.NewSet[Tag]("fast", "db", "fast")
	wanted := part.NewSet[Tag]("db", "replicated")

	fmt.Println(tags, tags.Len(), tags.Has("db"))
	fmt.Println(tags.Union(wanted))
	fmt.Println(tags.Intersect(wanted))
	fmt.Println(wanted.Difference(tags))

	data, _ := json.Marshal(tags)
	fmt.Println(string(data))
	var back part.Set[Tag]
	_ = json.Unmarshal(data, &back)
	fmt.Println(back.Equal(tags))
	// Output:
	// set[db fast] 2 true
	// set[db fast replicated]
	// set[db]
	// set[replicated]
	// ["db","fast"]
	// true
}
