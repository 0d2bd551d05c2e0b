package reconciler_test

import (
	"testing"
	"testing/synctest"
)

func TestBasic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		f.start()
		defer f.stop()
		f.upsert(pending(1, "a"), pending(2, "b"), pending(3, "c"))
		settle(0)
		f.expectOps("update(1)", "update(2)", "update(3)")
		if err := f.converged(); err != nil {
			t.Fatal(err)
		}
		f.remove(2)
		settle(0)
		f.expectOps("delete(2)")
		if err := f.converged(); err != nil {
			t.Fatal(err)
		}
		f.expectHealth("OK", "OK, 2 object(s)")
	})
}
