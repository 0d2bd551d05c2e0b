package stratacli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// The progress modes (--progress).
const (
	progressAuto = "auto" // a bar on a terminal (not in CI), log lines otherwise
	progressBar  = "bar"
	progressLog  = "log"
	progressNone = "none"
)

var progressModes = []string{progressAuto, progressBar, progressLog, progressNone}

// progress reports the advance of long work (export, import, verify,
// check) on stderr: a bar redrawn in place on a terminal, or a log line
// every interval otherwise, so that CI logs get a few lines and no escape
// sequences. The work adds to its counters with atomic adds; a goroutine
// of its own draws, until done stops it.
type progress struct {
	w        io.Writer
	what     string
	bar      bool
	interval time.Duration
	total    int64 // bytes expected, 0 if unknown
	start    time.Time

	bytes, objects atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
	// width of the last bar drawn, to clear it.
	width int
}

// newProgress starts reporting the progress of what. mode is one of
// progressModes; total is the number of bytes the work will go through,
// if known.
func newProgress(w io.Writer, mode string, interval time.Duration, what string, total int64) *progress {
	p := &progress{w: w, what: what, interval: interval, total: total, start: time.Now(), stop: make(chan struct{})}
	switch mode {
	case progressNone:
		return p
	case progressAuto:
		p.bar = isTerminal(w) && os.Getenv("CI") == ""
	case progressBar:
		p.bar = true
	}
	tick := interval
	if p.bar {
		tick = 100 * time.Millisecond
	}
	p.wg.Add(1)
	go p.run(tick)
	return p
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *progress) run(tick time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.draw(time.Now())
		}
	}
}

// add counts n bytes and objects more.
func (p *progress) add(bytes, objects int64) {
	p.bytes.Add(bytes)
	p.objects.Add(objects)
}

// set sets the bytes done so far.
func (p *progress) set(bytes int64) { p.bytes.Store(bytes) }

// done stops the reporting; a bar is cleared, so that the command's last
// words stand alone.
func (p *progress) done() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	p.wg.Wait()
	if p.bar && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	}
}

// line describes the progress at now.
func (p *progress) line(now time.Time) string {
	b, n := p.bytes.Load(), p.objects.Load()
	elapsed := now.Sub(p.start)
	var s strings.Builder
	fmt.Fprintf(&s, "%s: %s", p.what, humanBytes(b))
	if p.total > 0 {
		fmt.Fprintf(&s, " of %s (%d%%)", humanBytes(p.total), min(100, b*100/p.total))
	}
	if n > 0 {
		fmt.Fprintf(&s, ", %s", count(n, "object"))
	}
	if secs := elapsed.Seconds(); secs > 0 {
		fmt.Fprintf(&s, ", %s/s", humanBytes(int64(float64(b)/secs)))
	}
	fmt.Fprintf(&s, ", %s", elapsed.Truncate(time.Second))
	return s.String()
}

// draw writes the progress at now: the bar, or a log line.
func (p *progress) draw(now time.Time) {
	line := p.line(now)
	if !p.bar {
		fmt.Fprintln(p.w, line)
		return
	}
	const barWidth = 24
	bar := ""
	if p.total > 0 {
		filled := int(min(barWidth, p.bytes.Load()*barWidth/p.total))
		bar = "[" + strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled) + "] "
	} else {
		// No total: a marker that moves, so that the work shows alive.
		pos := int(now.Sub(p.start)/(100*time.Millisecond)) % barWidth
		bar = "[" + strings.Repeat(" ", pos) + "*" + strings.Repeat(" ", barWidth-pos-1) + "] "
	}
	out := bar + line
	pad := max(0, p.width-len(out))
	fmt.Fprintf(p.w, "\r%s%s", out, strings.Repeat(" ", pad))
	p.width = len(out)
}

// humanBytes renders n bytes in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// countingReader counts the bytes read through it into a progress.
type countingReader struct {
	r io.Reader
	p *progress
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.add(int64(n), 0)
	return n, err
}

// countingWriter counts the bytes written through it into a progress.
type countingWriter struct {
	w io.Writer
	p *progress
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.add(int64(n), 0)
	return n, err
}
