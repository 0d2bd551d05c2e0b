package remote

// Hold points: every hand-off of a change stream's goroutine (the one that
// ranges over Client.Changes or runs Mirror.Run) with the server and with
// the local table's readers passes a point where Client.hook, if set, is
// called. A test's hook blocks there until the test releases it, and so
// drives the hand-offs in orders it chooses (TestMirrorInterleavings;
// docs/interleavings.md). Unset, a point costs one nil check of a field.

// hold names a hold point.
type hold uint8

const (
	// holdConnect: a stream is about to (re)connect: from where it
	// stopped, or from 0 to list again.
	holdConnect hold = iota + 1
	// holdBackoff: a stream is about to wait before a reconnect.
	holdBackoff
	// holdEvent: a stream read an event from the server, before it acts
	// on it (yields it, or reconnects on a problem).
	holdEvent
	// holdMirrorCommit: a mirror is about to commit the changes it
	// applied (local readers see them).
	holdMirrorCommit
	// holdMirrorListing: a mirror read a whole listing, about to apply
	// it in one transaction (and mark its initializer done).
	holdMirrorListing
)

var holdNames = [...]string{"", "connect", "backoff", "event", "mirror-commit", "mirror-listing"}

func (p hold) String() string {
	if int(p) < len(holdNames) && p != 0 {
		return holdNames[p]
	}
	return "hold(?)"
}

// at passes the hold point p: it calls the hook, if one is set.
func (c *Client) at(p hold) {
	if c.hook != nil {
		c.hook(p)
	}
}
