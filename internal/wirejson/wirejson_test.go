package wirejson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendString pins AppendString's bytes to encoding/json's (without
// HTML escaping) for every byte alone, every rune class around the
// escapes, invalid UTF-8, and random strings.
func TestAppendString(t *testing.T) {
	cases := []string{"", "plain", `a"b\c`, "<&>", "\u2028\u2029", "é€😀", "\xff", "a\xc3", "\x00\x1f\x7f"}
	for b := range 256 {
		cases = append(cases, string([]byte{byte(b)}), "x"+string([]byte{byte(b)})+"y")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\n", "\t", "\x01", "<", "é", "\u2028", "\xff", "\xe2\x80", "😀"}
	for range 2000 {
		var s string
		for range rng.IntN(12) {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		want := std(t, s)
		if got := AppendString([]byte("prefix"), s); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("AppendString(%q) = %s, encoding/json gives %s", s, got[6:], want)
		}
		if got, err := Marshal(s); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Marshal(%q) = %s, %v, want %s", s, got, err, want)
		}
	}
}

// std is encoding/json's encoding without HTML escaping or newline.
func std(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

func TestEncoder(t *testing.T) {
	e := NewEncoder()
	type obj struct {
		A string `json:"a"`
		B []int  `json:"b"`
	}
	v := obj{A: "<x>", B: []int{1, 2}}
	got, err := e.Encode(v)
	if err != nil || string(got) != `{"a":"<x>","b":[1,2]}` {
		t.Errorf("Encode = %s, %v", got, err)
	}
	app, err := Append([]byte("["), v)
	if err != nil || string(app) != `[{"a":"<x>","b":[1,2]}` {
		t.Errorf("Append = %s, %v", app, err)
	}
	if _, err := e.Encode(make(chan int)); err == nil {
		t.Error("Encode of a channel: no error")
	}
	if b, err := Append([]byte("x"), make(chan int)); err == nil || string(b) != "x" {
		t.Errorf("Append of a channel = %q, %v; want dst unchanged and an error", b, err)
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := "a fairly ordinary string with a \"quote\" and é, of some length"
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
