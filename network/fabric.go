// Package network is valnet's user-space network fabric: a TCP proxy sits
// between every pair of validators and injects latency, jitter, bandwidth
// limits and partitions, so a network can be shaped on loopback without root
// or netem. It imports nothing from valnet but the latency leaf (the one
// delay model); the runner drives it.
package network

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/latency"
)

// Link shapes the bytes of one direction between two nodes.
type Link struct {
	Latency   latency.Model // drawn once per chunk; nil = 0
	Bandwidth float64       // bytes per second; 0 = unlimited
}

func (l Link) String() string {
	lat := "0"
	if l.Latency != nil {
		lat = l.Latency.String()
	}
	if l.Bandwidth <= 0 {
		return "latency " + lat
	}
	return fmt.Sprintf("latency %s, bandwidth %.0f B/s", lat, l.Bandwidth)
}

// Options tune a Fabric; the zero value is usable.
type Options struct {
	// Logf receives notable events (dial failures, partitions overflowing).
	Logf func(format string, args ...any)
	// QueueLimit bounds the bytes a connection direction reads ahead of
	// delivery while its link passes traffic, as TCP's window bounds the
	// bytes in the network; past it the sender feels backpressure.
	// Default 4 MiB.
	QueueLimit int64
	// HoldLimit bounds the bytes a partition holds per connection
	// direction; past it the connection is closed and logged, as TCP
	// eventually gives up. Default 64 MiB.
	HoldLimit int64
	// DialTimeout bounds the dial to a route's target. Default 5 s.
	DialTimeout time.Duration
	// ListenHost is the IP the proxies listen on. Default 127.0.0.1; the
	// docker backend sets its bridge gateway, which containers can reach.
	ListenHost string
	// PickPort, when set, chooses each proxy's port (0 = any). A caller
	// that also picks ports for the nodes themselves passes its picker,
	// so a proxy never takes a port a node is about to bind.
	PickPort func() (int, error)
	// Clock is the time every delay is measured on: arrival stamps, the
	// release timers, heal times and the accept backoff. Default the real
	// clock; tests pass a fake one to step through delays exactly.
	Clock clockwork.Clock
}

// LinkStats describes one directed link, from -> to.
type LinkStats struct {
	From, To    string
	Link        string // the link's shape, e.g. "latency fixed 50ms"
	Blocked     bool
	Bytes       int64 // delivered to the receiver
	Chunks      int64 // delivered writes (each up to 32 KiB)
	Connections int   // open connections carrying bytes from -> to
	Opened      int64 // connections ever opened carrying bytes from -> to
	HeldBytes   int64 // read from the sender, not yet delivered (propagating, queued or partitioned)
	Overflows   int64 // connections closed because a partition held more than HoldLimit
}

const (
	maxChunk          = 32 << 10
	minQueue          = 64 << 10
	defaultQueueLimit = 4 << 20
	defaultHoldLimit  = 64 << 20
	// bottleneckQueue is how much queueing a bandwidth-limited link allows
	// beyond its bandwidth-delay product, like a moderately buffered router.
	bottleneckQueue = 100 * time.Millisecond
	// chunkTime caps a chunk's transmit time on slow links so bytes trickle
	// out as packets would instead of in one late 32 KiB burst.
	chunkTime = 5 * time.Millisecond
)

type pair struct{ from, to string }

// link is the shared state of one directed link: its shape, its partition
// gate and its counters. Every connection carrying bytes from -> to uses it.
type link struct {
	from, to string
	clock    clockwork.Clock
	cfg      atomic.Pointer[Link]

	mu      sync.Mutex
	blocked bool
	healAt  time.Time     // when the link was last unblocked
	changed chan struct{} // closed and replaced whenever blocked flips

	bytes, chunks, opened, held, overflows atomic.Int64
	open                                   atomic.Int64
	// gated counts the writers holding a chunk until the link heals: the
	// one sign that a partition has bytes in hand rather than bytes still
	// on their way to it (tests wait on it).
	gated atomic.Int64
}

func newLink(from, to string, clock clockwork.Clock) *link {
	l := &link{from: from, to: to, clock: clock, changed: make(chan struct{})}
	l.cfg.Store(&Link{})
	return l
}

// gate returns the partition state; changed is closed when it next flips.
func (l *link) gate() (blocked bool, healAt time.Time, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blocked, l.healAt, l.changed
}

func (l *link) setBlocked(b bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.blocked == b {
		return
	}
	l.blocked = b
	if !b {
		l.healAt = l.clock.Now()
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// Fabric is a set of proxies, one per directed route between nodes.
type Fabric struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	links    map[pair]*link
	routes   map[pair]*route
	conns    map[*proxyConn]struct{}
	blocked  map[pair]bool   // explicit SetBlocked
	isolated map[string]bool // Isolate
}

// route is one listener: connections `from` dials to `to`.
type route struct {
	from, to string
	ln       net.Listener
	target   atomic.Pointer[string]
}

// NewFabric returns an empty fabric; add routes with Route.
func NewFabric(opts Options) *Fabric {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.QueueLimit <= 0 {
		opts.QueueLimit = defaultQueueLimit
	}
	if opts.HoldLimit <= 0 {
		opts.HoldLimit = defaultHoldLimit
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.ListenHost == "" {
		opts.ListenHost = "127.0.0.1"
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Fabric{
		opts: opts, ctx: ctx, cancel: cancel,
		links:    map[pair]*link{},
		routes:   map[pair]*route{},
		conns:    map[*proxyConn]struct{}{},
		blocked:  map[pair]bool{},
		isolated: map[string]bool{},
	}
}

// linkLocked returns the link from -> to, creating it with the partition
// state already requested for it. f.mu must be held.
func (f *Fabric) linkLocked(from, to string) *link {
	p := pair{from, to}
	l, ok := f.links[p]
	if !ok {
		l = newLink(from, to, f.opts.Clock)
		l.blocked = f.blockedLocked(p)
		f.links[p] = l
	}
	return l
}

func (f *Fabric) blockedLocked(p pair) bool {
	return f.blocked[p] || f.isolated[p.from] || f.isolated[p.to]
}

// applyLocked brings every link's gate in line with the requested blocks.
func (f *Fabric) applyLocked() {
	for p, l := range f.links {
		l.setBlocked(f.blockedLocked(p))
	}
}

// Route opens a proxy (on Options.ListenHost) for connections that node
// from dials to node to, whose real listen address is target, and returns
// the proxy's address for from to dial instead. Bytes from -> to are
// shaped by the link (from, to), the replies by (to, from). Routing the
// same pair again returns the same proxy and updates its target.
func (f *Fabric) Route(from, to, target string) (string, error) {
	return f.route(from, to, target, "")
}

// RouteAt is Route with the proxy listening on listen (host:port), for
// a dialer whose address is fixed, such as a user's own signer.
func (f *Fabric) RouteAt(from, to, listen, target string) (string, error) {
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return "", fmt.Errorf("network: route %s -> %s: listen address %q: %w", from, to, listen, err)
	}
	return f.route(from, to, target, listen)
}

func (f *Fabric) route(from, to, target, listen string) (string, error) {
	if from == "" || to == "" || from == to {
		return "", fmt.Errorf("network: route needs two distinct nodes, got %q -> %q", from, to)
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return "", fmt.Errorf("network: route %s -> %s: target %q: %w", from, to, target, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", fmt.Errorf("network: fabric closed")
	}
	p := pair{from, to}
	if r, ok := f.routes[p]; ok {
		r.target.Store(&target)
		return r.ln.Addr().String(), nil
	}
	if listen == "" {
		port := 0
		if f.opts.PickPort != nil {
			p, err := f.opts.PickPort()
			if err != nil {
				return "", err
			}
			port = p
		}
		listen = net.JoinHostPort(f.opts.ListenHost, strconv.Itoa(port))
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", fmt.Errorf("network: route %s -> %s: %w", from, to, err)
	}
	r := &route{from: from, to: to, ln: ln}
	r.target.Store(&target)
	f.routes[p] = r
	f.linkLocked(from, to)
	f.linkLocked(to, from)
	f.wg.Add(1)
	go f.accept(r)
	return ln.Addr().String(), nil
}

// SetLink shapes the bytes from -> to. It applies to bytes read from now
// on, on open connections too.
func (f *Fabric) SetLink(from, to string, l Link) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.linkLocked(from, to).cfg.Store(&l)
}

// SetBlocked partitions (or heals) the direction from -> to. Blocked bytes
// are held, not dropped, as TCP keeps retransmitting through a partition:
// they are delivered after the heal if the connection still lives.
func (f *Fabric) SetBlocked(from, to string, blocked bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := pair{from, to}
	if blocked {
		f.blocked[p] = true
	} else {
		delete(f.blocked, p)
	}
	f.linkLocked(from, to)
	f.applyLocked()
}

// Isolate blocks every link to and from node, present and future, until
// Isolate(node, false) or HealAll. Links blocked by SetBlocked stay blocked
// when the isolation ends.
func (f *Fabric) Isolate(node string, isolated bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if isolated {
		f.isolated[node] = true
	} else {
		delete(f.isolated, node)
	}
	f.applyLocked()
}

// HealAll lifts every block and isolation.
func (f *Fabric) HealAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.blocked)
	clear(f.isolated)
	f.applyLocked()
}

// Retarget points new connections to node to at target (the node restarted
// on another port). Open connections keep their old target.
func (f *Fabric) Retarget(to, target string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, r := range f.routes {
		if p.to == to {
			r.target.Store(&target)
		}
	}
}

// Stats returns every directed link's counters, sorted by (From, To).
func (f *Fabric) Stats() []LinkStats {
	f.mu.Lock()
	links := make([]*link, 0, len(f.links))
	for _, l := range f.links {
		links = append(links, l)
	}
	f.mu.Unlock()
	out := make([]LinkStats, 0, len(links))
	for _, l := range links {
		blocked, _, _ := l.gate()
		out = append(out, LinkStats{
			From: l.from, To: l.to, Link: l.cfg.Load().String(), Blocked: blocked,
			Bytes: l.bytes.Load(), Chunks: l.chunks.Load(),
			Connections: int(l.open.Load()), Opened: l.opened.Load(),
			HeldBytes: l.held.Load(), Overflows: l.overflows.Load(),
		})
	}
	slices.SortFunc(out, func(a, b LinkStats) int {
		if c := strings.Compare(a.From, b.From); c != 0 {
			return c
		}
		return strings.Compare(a.To, b.To)
	})
	return out
}

// Close closes every listener and proxied connection and returns once all
// of the fabric's goroutines have ended.
func (f *Fabric) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.cancel()
	for _, r := range f.routes {
		r.ln.Close()
	}
	for c := range f.conns {
		c.abort()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

func (f *Fabric) accept(r *route) {
	defer f.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			// Out of descriptors or similar: wait rather than spin.
			f.opts.Logf("network: accept %s -> %s: %v", r.from, r.to, err)
			select {
			case <-f.ctx.Done():
				return
			case <-f.opts.Clock.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		f.wg.Add(1)
		go f.serve(r, c.(*net.TCPConn))
	}
}

// serve dials the route's target and proxies the connection. Its goroutine
// becomes one of the connection's four loops.
func (f *Fabric) serve(r *route, client *net.TCPConn) {
	defer f.wg.Done()
	target := *r.target.Load()
	d := net.Dialer{Timeout: f.opts.DialTimeout}
	sc, err := d.DialContext(f.ctx, "tcp", target)
	if err != nil {
		if f.ctx.Err() == nil {
			f.opts.Logf("network: %s -> %s: dial %s: %v", r.from, r.to, target, err)
		}
		client.Close()
		return
	}
	server := sc.(*net.TCPConn)
	// Go sets TCP_NODELAY by default; say it, since latency accuracy needs it.
	client.SetNoDelay(true)
	server.SetNoDelay(true)

	f.mu.Lock()
	fwd, back := f.linkLocked(r.from, r.to), f.linkLocked(r.to, r.from)
	pc := newProxyConn(f, client, server, fwd, back)
	if f.closed {
		f.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	f.conns[pc] = struct{}{}
	f.wg.Add(3)
	f.mu.Unlock()
	fwd.opened.Add(1)
	back.opened.Add(1)
	fwd.open.Add(1)
	back.open.Add(1)

	go func() { defer f.wg.Done(); pc.fwd.read() }()
	go func() { defer f.wg.Done(); pc.fwd.write() }()
	go func() { defer f.wg.Done(); pc.back.read() }()
	pc.back.write()
}

// finish runs once all four loops of pc have ended.
func (f *Fabric) finish(pc *proxyConn) {
	pc.client.Close()
	pc.server.Close()
	pc.fwd.drop()
	pc.back.drop()
	pc.fwd.link.open.Add(-1)
	pc.back.link.open.Add(-1)
	f.mu.Lock()
	delete(f.conns, pc)
	f.mu.Unlock()
}
