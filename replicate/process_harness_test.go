package replicate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The harness of the process tests (process_test.go): the example program
// (example/cluster), built once into a temporary directory, run as
// three processes on loopback TCP with free ports, each on a data
// directory of its own that outlives its process, spoken to over its
// HTTP API. Nothing is mocked: the nodes are real processes, their raft
// traffic and forwarded writes go over real TCP, their logs are Pebble
// stores on disk.

// The example program, built once for every process test (it is linked
// from the go command's cache, still a few seconds on a loaded machine),
// in a directory TestMain removes at the end.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildCluster builds example/cluster, once, and returns the binary's
// path.
func buildCluster(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		// The go command that runs the test, if the environment names it.
		gocmd := "go"
		if root := os.Getenv("GOROOT"); root != "" {
			if p := filepath.Join(root, "bin", "go"); fileExists(p) {
				gocmd = p
			}
		}
		if built.dir, built.err = os.MkdirTemp("", "replicate-cluster"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "cluster")
		out, err := exec.Command(gocmd, "build", "-o", built.bin, "./example/cluster").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build ./example/cluster: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// removeClusterBuild removes what buildCluster built.
func removeClusterBuild() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// handedOut is every port freePorts returned in this process.
var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// freePorts returns n loopback addresses whose ports were free a moment
// ago (all held open at once, so they differ). They are taken below the
// kernel's ephemeral range (ip_local_port_range), from which the outgoing
// connections of every test take their source ports: a node restarted on
// a port from that range could find it taken by one (a CI run failed so,
// "bind: address already in use"). No port is handed out twice in a test
// process: the tests that run at once (TestProcess's subtests,
// TestStartServer) each close their ports before their processes bind
// them, and one could take another's meanwhile (a run failed so too).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 10000 {
				low = v
			}
		}
	}
	var lns []net.Listener
	var addrs []string
	for tries := 0; len(addrs) < n; tries++ {
		if tries == 1000 {
			t.Fatalf("no free loopback port below %d in 1000 tries", low)
		}
		port := 10000 + rand.IntN(low-10000)
		if handedOut.ports[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		handedOut.ports[port] = true
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		must(t, ln.Close())
	}
	return addrs
}

// procNode is one node of a procCluster: its addresses and data directory,
// which stay across its restarts, and its current process.
type procNode struct {
	id   string
	api  string
	dir  string // -dir
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once the process exited and its stderr is read
	// log is the last lines of stderr, of every run, for a failure's
	// report; onLine, if set, sees each line as it is read.
	log    []string
	onLine func(line string)
	exit   string // how the last process ended
	// events are the times the lines of raftEvents were read, by event.
	events map[string][]time.Time
}

// The lines of raft's log (-log info and up) whose times the harness
// records: a follower's election timer firing, the election's steps, and
// a vote refused because the voter still knows a leader.
const (
	eventTimeout = "heartbeat timeout reached"
	eventLeader  = "entering leader state"
	eventRefusal = "since we have a leader" // a vote or pre-vote refused
)

var raftEvents = []string{eventTimeout, eventLeader, eventRefusal}

// firstEvent returns the time of nd's first line of event read after t.
func (nd *procNode) firstEvent(event string, t time.Time) (time.Time, bool) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	for _, at := range nd.events[event] {
		if at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// countEvents returns how many lines of event nd printed after t.
func (nd *procNode) countEvents(event string, t time.Time) int {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	n := 0
	for _, at := range nd.events[event] {
		if at.After(t) {
			n++
		}
	}
	return n
}

// running reports whether the node's process runs (was started and has
// not been waited for).
func (nd *procNode) running() bool {
	nd.mu.Lock()
	done := nd.done
	nd.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// procCluster is three example/cluster processes.
type procCluster struct {
	t       *testing.T
	bin     string
	timeout time.Duration // -timeout: raft's election timeout
	nodes   []*procNode
	tr      *http.Transport
	client  *http.Client

	ctx    context.Context // cancelled at cleanup: ends watches
	cancel context.CancelFunc
	wg     sync.WaitGroup // watches
}

// startProcCluster builds the program and starts three nodes with the
// given raft timeout and extra flags, and waits for a leader. Every
// process is killed, and every goroutine of the harness ended, at the
// test's end.
func startProcCluster(t *testing.T, timeout time.Duration, extra ...string) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: buildCluster(t), timeout: timeout}
	c.tr = &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: time.Minute}
	c.client = &http.Client{Transport: c.tr}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// Cleanups run last first: the processes die before their
	// directories go.
	root := t.TempDir()
	t.Cleanup(c.close)
	addrs := freePorts(t, 9)
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("n%d=%s=%s", i+1, addrs[3*i], addrs[3*i+1]))
	}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		nd := &procNode{id: id, api: addrs[3*i+2], dir: filepath.Join(root, id)}
		nd.args = append([]string{"-id", id, "-api", nd.api, "-dir", nd.dir,
			"-peers", strings.Join(peers, ","), "-timeout", timeout.String()}, extra...)
		c.nodes = append(c.nodes, nd)
		c.start(nd)
	}
	c.leader(20 * timeout)
	return c
}

// start starts nd's process on its data directory.
func (c *procCluster) start(nd *procNode) {
	c.t.Helper()
	cmd := exec.Command(c.bin, nd.args...)
	stderr, err := cmd.StderrPipe()
	must(c.t, err)
	must(c.t, cmd.Start())
	done := make(chan struct{})
	nd.mu.Lock()
	nd.cmd, nd.done = cmd, done
	nd.mu.Unlock()
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			now := time.Now()
			nd.mu.Lock()
			for _, ev := range raftEvents {
				if strings.Contains(line, ev) {
					if nd.events == nil {
						nd.events = map[string][]time.Time{}
					}
					nd.events[ev] = append(nd.events[ev], now)
				}
			}
			if len(nd.log) >= 400 {
				nd.log = append(nd.log[:0], nd.log[200:]...)
			}
			nd.log = append(nd.log, line)
			hook := nd.onLine
			nd.mu.Unlock()
			if hook != nil {
				hook(line)
			}
		}
		err := cmd.Wait()
		nd.mu.Lock()
		nd.exit = fmt.Sprint(err)
		nd.mu.Unlock()
	}()
}

// kill kills nd's process with SIGKILL and waits for it.
func (c *procCluster) kill(nd *procNode) {
	nd.mu.Lock()
	done := nd.done
	nd.mu.Unlock()
	if done == nil {
		return
	}
	nd.signalKill()
	<-done
}

// signalKill sends SIGKILL to nd's process, and does not wait.
func (nd *procNode) signalKill() {
	nd.mu.Lock()
	cmd := nd.cmd
	nd.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL) // it may have died already
	}
}

// close kills every process, ends the watches and closes the client's
// connections.
func (c *procCluster) close() {
	for _, nd := range c.nodes {
		c.kill(nd)
		if c.t.Failed() {
			nd.mu.Lock()
			c.t.Logf("%s's last stderr lines (exit: %s):\n%s", nd.id, nd.exit, strings.Join(nd.log[max(0, len(nd.log)-40):], "\n"))
			nd.mu.Unlock()
		}
	}
	c.cancel()
	c.wg.Wait()
	c.tr.CloseIdleConnections()
}

// procStatus is what GET /status answers (example/cluster's status).
type procStatus struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Leader    string `json:"leader"`
	Term      uint64 `json:"term"`
	Applied   uint64 `json:"applied"`
	Published uint64 `json:"published"`
	LogFirst  uint64 `json:"log_first"`
	LogLast   uint64 `json:"log_last"`
	Objects   int    `json:"objects"`
	Revision  uint64 `json:"revision"`
	Digest    string `json:"digest"`
}

// procObject is the program's object.
type procObject struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Writes int    `json:"writes"`
}

// call makes one request of nd's API and decodes a 200's JSON answer
// into out; another status is an error with the answer's text.
func (c *procCluster) call(ctx context.Context, nd *procNode, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+nd.api+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s on %s: %s: %s", method, path, nd.id, resp.Status, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

// status returns nd's status, asked with a short timeout.
func (c *procCluster) status(nd *procNode) (procStatus, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
	defer cancel()
	var s procStatus
	err := c.call(ctx, nd, http.MethodGet, "/status", nil, &s)
	return s, err
}

// waitAPI waits up to within until nd's API answers.
func (c *procCluster) waitAPI(nd *procNode, within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := c.status(nd); err == nil {
			return
		} else if time.Now().After(deadline) {
			c.t.Fatalf("%s's API did not answer within %v: %v", nd.id, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leader waits up to within for a node that says it leads, and returns
// it.
func (c *procCluster) leader(within time.Duration) *procNode {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, nd := range c.nodes {
			if !nd.running() {
				continue
			}
			if s, err := c.status(nd); err == nil && s.State == "Leader" {
				return nd
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %v", within)
	return nil
}

// list returns every object nd holds (a stale read: the callers wait for
// convergence first).
func (c *procCluster) list(nd *procNode) map[string]procObject {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	var objs []procObject
	must(c.t, c.call(ctx, nd, http.MethodGet, "/objects", nil, &objs))
	m := make(map[string]procObject, len(objs))
	for _, o := range objs {
		m[o.Key] = o
	}
	return m
}

// get reads key on nd with the read mode query asks for ("read=linearizable",
// "index=N").
func (c *procCluster) get(nd *procNode, key, query string) (procObject, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	var o procObject
	err := c.call(ctx, nd, http.MethodGet, "/objects/"+key+"?"+query, nil, &o)
	return o, err
}

// lastAck returns the acknowledged write of the highest index.
func (w *procWriters) lastAck() (string, procAck) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var key string
	var last procAck
	for k, a := range w.acked {
		if a.index >= last.index {
			key, last = k, a
		}
	}
	return key, last
}

// checkRead fails the test unless a read of w's last acknowledged write
// on nd, in the mode query asks for, returns it.
func (c *procCluster) checkRead(t *testing.T, w *procWriters, nd *procNode, query string) {
	t.Helper()
	key, a := w.lastAck()
	if o, err := c.get(nd, key, query); err != nil || o.Value != a.value {
		t.Errorf("%s: read of %s (index %d) with %s: %+v, %v", nd.id, key, a.index, query, o, err)
	}
}

// waitConverged waits up to within until the running nodes among nodes
// report the same applied index, all of it published, and the same
// digest, twice in a row; it fails the test otherwise, and returns the
// status.
func (c *procCluster) waitConverged(nodes []*procNode, within time.Duration) procStatus {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var prev, last []procStatus
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = nil, nil
		for _, nd := range nodes {
			s, err := c.status(nd)
			if err != nil {
				lastErr = err
				break
			}
			last = append(last, s)
		}
		if lastErr == nil && sameState(last) && len(prev) > 0 && sameState(append(prev, last...)) {
			return last[0]
		}
		prev = last
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("nodes did not converge within %v: %+v (%v)", within, last, lastErr)
	return procStatus{}
}

// sameState reports whether every status has the same applied index, all
// of it published, and the same digest.
func sameState(ss []procStatus) bool {
	for _, s := range ss {
		if s.Applied != ss[0].Applied || s.Published != s.Applied || s.Digest != ss[0].Digest {
			return false
		}
	}
	return len(ss) > 0
}

// procAck is an acknowledged write.
type procAck struct {
	value      string
	index      uint64
	start, end time.Time
	node       string
}

// procWriters are clients that write new keys, each through every node
// in turn, until stopped, and record what was tried and what was
// acknowledged. A write that failed (any answer but 200, or none) may or
// may not have committed: it is never tried again.
type procWriters struct {
	c    *procCluster
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	tried   map[string]string // key: value
	acked   map[string]procAck
	failed  int
	lastErr error
}

// startWriters starts n clients writing keys prefix-cK-I with values of
// about size bytes.
func (c *procCluster) startWriters(prefix string, n, size int) *procWriters {
	w := &procWriters{c: c, stop: make(chan struct{}), tried: map[string]string{}, acked: map[string]procAck{}}
	w.add(prefix, n, size)
	return w
}

// add starts n more clients.
func (w *procWriters) add(prefix string, n, size int) {
	pad := strings.Repeat("x", size)
	for k := range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				nd := w.c.nodes[(k+i)%len(w.c.nodes)]
				key := fmt.Sprintf("%s-c%d-%d", prefix, k, i)
				value := key + "@" + nd.id + ":" + pad
				w.mu.Lock()
				w.tried[key] = value
				w.mu.Unlock()
				ctx, cancel := context.WithTimeout(w.c.ctx, 10*time.Second)
				start := time.Now()
				var ans struct {
					Index  uint64 `json:"index"`
					Writes int    `json:"writes"`
				}
				err := w.c.call(ctx, nd, http.MethodPut, "/objects/"+key, []byte(value), &ans)
				cancel()
				end := time.Now()
				w.mu.Lock()
				if err == nil {
					w.acked[key] = procAck{value: value, index: ans.Index, start: start, end: end, node: nd.id}
				} else {
					w.failed++
					w.lastErr = err
				}
				w.mu.Unlock()
				// A pause, more after a failure (a dead node refuses at
				// once): the writes need not be as fast as they can be,
				// and the package's other cluster tests, in parallel,
				// lose leaders when the machine is busy.
				pause := 2 * time.Millisecond
				if err != nil {
					pause = 5 * time.Millisecond
				}
				time.Sleep(pause)
			}
		}()
	}
}

// halt stops the clients and waits for their writes in flight.
func (w *procWriters) halt() {
	close(w.stop)
	w.wg.Wait()
}

// acks returns how many writes were acknowledged.
func (w *procWriters) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// firstAckAfter returns the end of the first acknowledged write that
// began after t, and whether there is one.
func (w *procWriters) firstAckAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, a := range w.acked {
		if a.start.After(t) && (first.IsZero() || a.end.Before(first)) {
			first = a.end
		}
	}
	return first, !first.IsZero()
}

// check fails the test unless objs (a node's objects) hold every
// acknowledged write with its value, hold nothing that was not tried,
// and hold every key as written once (a write applied twice would have
// read its own first application and counted 2). Keys outside the
// writers' prefix are left alone.
func (w *procWriters) check(t *testing.T, node string, objs map[string]procObject, prefix string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	lost := 0
	for key, a := range w.acked {
		o, ok := objs[key]
		if !ok || o.Value != a.value {
			if lost++; lost <= 5 {
				t.Errorf("%s: acknowledged write of %s (index %d, via %s) lost: found %v %q", node, key, a.index, a.node, ok, o.Value)
			}
		}
	}
	for key, o := range objs {
		if !strings.HasPrefix(key, prefix+"-") {
			continue
		}
		if v, ok := w.tried[key]; !ok || v != o.Value {
			t.Errorf("%s: %s = %q was never written", node, key, o.Value)
		}
		if o.Writes != 1 {
			t.Errorf("%s: %s applied %d times, written once", node, key, o.Writes)
		}
	}
	if lost > 0 {
		t.Errorf("%s: %d of %d acknowledged writes lost", node, lost, len(w.acked))
	}
}

// procWatch is a client of a node's GET /watch: the keys its change feed
// delivered, until the node dies or the test ends.
type procWatch struct {
	node string
	mu   sync.Mutex
	seen map[string]string // key: value
	done chan struct{}     // closed once the stream ended
	err  error
}

// watch opens a watch on nd.
func (c *procCluster) watch(nd *procNode) *procWatch {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, "http://"+nd.api+"/watch", nil)
	must(c.t, err)
	resp, err := c.client.Do(req)
	must(c.t, err)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		c.t.Fatalf("watch %s: %s", nd.id, resp.Status)
	}
	pw := &procWatch{node: nd.id, seen: map[string]string{}, done: make(chan struct{})}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(pw.done)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ch struct {
				Object  procObject `json:"object"`
				Deleted bool       `json:"deleted"`
			}
			if err := dec.Decode(&ch); err != nil {
				pw.mu.Lock()
				pw.err = err
				pw.mu.Unlock()
				return
			}
			pw.mu.Lock()
			if ch.Deleted {
				delete(pw.seen, ch.Object.Key)
			} else {
				pw.seen[ch.Object.Key] = ch.Object.Value
			}
			pw.mu.Unlock()
		}
	}()
	return pw
}

// waitDelivered waits up to within until the watch delivered every
// acknowledged write of w, and fails the test if it ends or times out
// first.
func (pw *procWatch) waitDelivered(t *testing.T, w *procWriters, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		missing, example := 0, ""
		w.mu.Lock()
		pw.mu.Lock()
		for key, a := range w.acked {
			if pw.seen[key] != a.value {
				missing++
				example = key
			}
		}
		pw.mu.Unlock()
		w.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-pw.done:
			t.Errorf("watch on %s ended (%v) with %d acknowledged writes undelivered, %s one", pw.node, pw.err, missing, example)
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Errorf("watch on %s: %d acknowledged writes undelivered after %v, %s one", pw.node, missing, within, example)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
