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

// Prefix finds the string keys that start with a prefix.
func ExampleMap_Prefix() {
	regions := part.FromMap(map[string]int{"eu-north": 1, "eu-west": 2, "us-east": 3})
	for k, v := range regions.Prefix("eu-") {
		fmt.Println(k, v)
	}
	// Output:
	// eu-north 1
	// eu-west 2
}

// First is the smallest element.
func ExampleSet_First() {
	ports := part.NewSet[uint16](8080, 443, 80)
	first, ok := ports.First()
	fmt.Println(first, ok)
	// Output:
	// 80 true
}

// One-operation writes on a Tree return the new tree and leave the old
// one as it was.
func ExampleTree_Insert() {
	t0 := part.New[int]()
	_, _, t1 := t0.Insert([]byte("a"), 1)
	old, hadOld, t2 := t1.Insert([]byte("a"), 2)
	fmt.Println(old, hadOld, t0.Len(), t1.Len(), t2.Len())
	v1, _ := t1.Get([]byte("a"))
	v2, _ := t2.Get([]byte("a"))
	fmt.Println(v1, v2)
	// Output:
	// 1 true 0 1 1
	// 1 2
}
