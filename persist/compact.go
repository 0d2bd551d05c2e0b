package persist

import (
	"context"
	"fmt"
)

// Compact compacts the whole store: Pebble rewrites its files into the
// LSM's last level, dropping what deletes and replacements left behind,
// so that the store takes the least space and opens with the least work.
// It returns when the compaction is done, or with ctx's error when ctx is
// done first (the work done so far stays). Commits go on meanwhile.
func (s *Store) Compact(ctx context.Context) (err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return fmt.Errorf("persist: compact %s: %w", s.dir, err)
	}
	defer recoverFatal(&err)
	// Every key begins with a tag byte below 0xff (keys.go).
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("persist: compact %s: %w", s.dir, ctx.Err())
		}
		return fmt.Errorf("persist: compact %s: %w", s.dir, fromPebble(err))
	}
	return nil
}
