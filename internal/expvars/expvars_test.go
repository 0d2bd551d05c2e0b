package expvars

import (
	"errors"
	"expvar"
	"strings"
	"sync"
	"testing"
)

func TestPublish(t *testing.T) {
	v := new(expvar.Int)
	if err := Publish("test", "strata-expvars-test", v); err != nil {
		t.Fatal(err)
	}
	if expvar.Get("strata-expvars-test") != v {
		t.Fatal("not published")
	}
	err := Publish("other", "strata-expvars-test", new(expvar.Int))
	if !errors.Is(err, ErrPublished) || !strings.HasPrefix(err.Error(), `other: "strata-expvars-test"`) {
		t.Errorf("second Publish = %v, want ErrPublished prefixed with its package", err)
	}
}

func TestMax(t *testing.T) {
	var m Max
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { m.Observe(int64(i)) })
	}
	wg.Wait()
	m.Observe(-5)
	if m.Load() != 99 || m.String() != "99" {
		t.Errorf("Max = %d (%s), want 99", m.Load(), m.String())
	}
}

func TestSetIfChanged(t *testing.T) {
	var v expvar.Int
	SetIfChanged(&v, 7)
	SetIfChanged(&v, 7)
	if v.Value() != 7 {
		t.Errorf("gauge = %d, want 7", v.Value())
	}
}
