package httpapi

import "net/http"

// Hold points: every hand-off between the handler's goroutines (a writer's
// commit reaching the hub, the hub publishing into its ring, the streams
// reading runs of lines from it, slow consumers falling behind,
// subscribe and unsubscribe, Close) passes a point where Handler.hook, if
// set, is called. A test's hook blocks the calling goroutine until the
// test releases it, and so drives the hand-offs in orders it chooses
// (TestHubInterleavings; docs/interleavings.md). Unset, a point costs one
// nil check of a field: no call, no allocation.

// hold names a hold point.
type hold uint8

const (
	// holdAttach: a stream is about to attach to its table's hub,
	// starting one if there is none (subscribe).
	holdAttach hold = iota + 1
	// holdAttached: a stream attached, before it seeks where it starts
	// in the ring and takes its snapshot.
	holdAttached
	// holdStreamRead: a stream is about to read the next run of the
	// ring's entries (or to find it fell behind, or the hub stopped).
	holdStreamRead
	// holdStreamWrite: a stream read a run, and is about to write it.
	holdStreamWrite
	// holdStreamWait: a caught-up stream is about to wait for the hub's
	// next append, its bookmark tick, its client or Close.
	holdStreamWait
	// holdDetach: a stream is ending, about to detach (unsubscribe).
	holdDetach
	// holdHubOpen: a hub's goroutine started, about to open its feed.
	holdHubOpen
	// holdHubWake: the hub's feed has changes (a writer committed),
	// before the hub's pause and its read of them.
	holdHubWake
	// holdHubPublish: the hub read a round of changes, and is about to
	// append it to the ring (evicting the oldest, waking the streams).
	holdHubPublish
	// holdHubSubs: the hub was poked: its stream count reached or left 0.
	holdHubSubs
	// holdHubRetire: the hub's retention ran out, before it checks its
	// streams and leaves the handler's map.
	holdHubRetire
	// holdHubStop: the hub's goroutine is returning, about to mark the
	// ring stopped and wake its streams.
	holdHubStop
	// holdClose: Close was called, before it cancels the handler.
	holdClose
	// holdCloseWait: Close cancelled the handler, before it waits for
	// the hubs' goroutines.
	holdCloseWait
)

var holdNames = [...]string{"", "attach", "attached", "stream-read", "stream-write", "stream-wait", "detach",
	"hub-open", "hub-wake", "hub-publish", "hub-subs", "hub-retire", "hub-stop", "close", "close-wait"}

func (p hold) String() string {
	if int(p) < len(holdNames) && p != 0 {
		return holdNames[p]
	}
	return "hold(?)"
}

// at passes the hold point p, on behalf of the stream of r (nil for
// the hub's and Close's points): it calls the hook, if one is set.
func (h *Handler) at(p hold, r *http.Request) {
	if h.hook != nil {
		h.hook(p, r)
	}
}
