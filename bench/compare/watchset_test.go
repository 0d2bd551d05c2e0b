package main

import (
	"context"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/strata-db/strata"
)

// The WatchSet benchmarks run the same work against Strata's WatchSet and
// cilium/statedb's, which share their method names:
//
//	cd bench/compare && go test -run '^$' -bench WatchSet -count 5
//
// They mirror BenchmarkWatchSet_Wait_1024 and BenchmarkWatchSet_Add_1024 of
// the strata package.

// wsbSet is the part of the WatchSet API the benchmarks use.
type wsbSet interface {
	*strata.WatchSet | *statedb.WatchSet
	Add(...<-chan struct{})
	Clear()
	Wait(context.Context, time.Duration) ([]<-chan struct{}, error)
}

func wsbChans(n int) ([]chan struct{}, []<-chan struct{}) {
	chs := make([]chan struct{}, n)
	recv := make([]<-chan struct{}, n)
	for i := range chs {
		chs[i] = make(chan struct{})
		recv[i] = chs[i]
	}
	return chs, recv
}

// BenchmarkWatchSet_Wait_1024: one op is closing one channel of a set of
// 1024, a Wait that returns it, and adding a new channel to keep the size.
// The channels are made before the timer starts.
func BenchmarkWatchSet_Wait_1024(b *testing.B) {
	b.Run("impl=strata", func(b *testing.B) { wsbWait(b, strata.NewWatchSet()) })
	b.Run("impl=statedb", func(b *testing.B) { wsbWait(b, statedb.NewWatchSet()) })
}

func wsbWait[W wsbSet](b *testing.B, ws W) {
	const size = 1024
	chs, recv := wsbChans(size + b.N)
	ws.Add(recv[:size]...)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		close(chs[i])
		closed, err := ws.Wait(ctx, 0)
		if err != nil || len(closed) != 1 || closed[0] != recv[i] {
			b.Fatalf("Wait = %d channels, %v", len(closed), err)
		}
		ws.Add(recv[size+i : size+i+1]...) // no variadic slice to allocate
	}
}

// BenchmarkWatchSet_Add_1024: one op is Clear and Add of 1024 channels, in
// one call, to a set that held as many before.
func BenchmarkWatchSet_Add_1024(b *testing.B) {
	b.Run("impl=strata", func(b *testing.B) { wsbAdd(b, strata.NewWatchSet()) })
	b.Run("impl=statedb", func(b *testing.B) { wsbAdd(b, statedb.NewWatchSet()) })
}

func wsbAdd[W wsbSet](b *testing.B, ws W) {
	_, recv := wsbChans(1024)
	ws.Add(recv...)
	b.ReportAllocs()
	for b.Loop() {
		ws.Clear()
		ws.Add(recv...)
	}
}
