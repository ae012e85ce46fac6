package network

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/latency"
)

// proxyConn is one proxied connection: the accepted client leg, the dialed
// server leg and a pipe per direction. It has four loops (a reader and a
// writer per direction); the last to end cleans up.
type proxyConn struct {
	f              *Fabric
	client, server *net.TCPConn
	fwd, back      *pipe
	done           chan struct{} // closed by abort
	once           sync.Once
	loops          atomic.Int32
}

func newProxyConn(f *Fabric, client, server *net.TCPConn, fwd, back *link) *proxyConn {
	pc := &proxyConn{f: f, client: client, server: server, done: make(chan struct{})}
	pc.loops.Store(4)
	pc.fwd = newPipe(pc, fwd, client, server)
	pc.back = newPipe(pc, back, server, client)
	return pc
}

// abort closes both legs at once: any error on either side ends the
// connection, as a reset would.
func (pc *proxyConn) abort() {
	pc.once.Do(func() {
		close(pc.done)
		pc.client.Close()
		pc.server.Close()
	})
}

func (pc *proxyConn) loopDone() {
	if pc.loops.Add(-1) == 0 {
		pc.f.finish(pc)
	}
}

// chunk is what one read returned, stamped on arrival. The delay and rate
// are taken when the bytes are read so SetLink applies from then on.
type chunk struct {
	data    []byte
	buf     *[]byte // pooled buffer backing data, if any
	eof     bool
	arrival time.Time
	delay   time.Duration
	rate    float64
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, maxChunk); return &b }}

// pipe carries one direction of a connection: read() queues chunks from
// src, write() releases them to dst at their time.
type pipe struct {
	pc       *proxyConn
	link     *link
	src, dst *net.TCPConn

	mu     sync.Mutex
	q      []chunk
	queued int64

	avail chan struct{} // wakes the writer: a chunk was queued
	space chan struct{} // wakes the reader: a chunk was delivered
}

func newPipe(pc *proxyConn, l *link, src, dst *net.TCPConn) *pipe {
	return &pipe{pc: pc, link: l, src: src, dst: dst,
		avail: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func draw(d latency.Model) time.Duration {
	if d == nil {
		return 0
	}
	return max(d.Draw(), 0)
}

func (p *pipe) read() {
	defer p.pc.loopDone()
	bp := bufPool.Get().(*[]byte)
	defer func() { bufPool.Put(bp) }()
	var lastDelay time.Duration
	for {
		if !p.waitRoom(lastDelay) {
			return
		}
		size := maxChunk
		if bw := p.link.cfg.Load().Bandwidth; bw > 0 {
			size = min(max(int(bw*chunkTime.Seconds()), 1024), maxChunk)
		}
		n, err := p.src.Read((*bp)[:size])
		if n > 0 {
			c := chunk{arrival: p.pc.f.opts.Clock.Now()}
			cfg := p.link.cfg.Load()
			c.delay, c.rate = draw(cfg.Latency), cfg.Bandwidth
			lastDelay = c.delay
			// Large reads hand the buffer over; small ones are copied so a
			// partition holding many small messages does not pin 32 KiB each.
			if n >= maxChunk/4 {
				c.data, c.buf = (*bp)[:n], bp
				bp = bufPool.Get().(*[]byte)
			} else {
				c.data = append([]byte(nil), (*bp)[:n]...)
			}
			if !p.push(c) {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The FIN travels like data: delayed, held, in order.
				p.push(chunk{eof: true, arrival: p.pc.f.opts.Clock.Now(), delay: draw(p.link.cfg.Load().Latency)})
			} else {
				p.pc.abort()
			}
			return
		}
	}
}

// waitRoom applies backpressure while the link passes traffic: the reader
// stops once the queue holds what TCP would keep in the network. While the
// link is blocked it keeps reading (up to HoldLimit, checked in push) so the
// sender's own timeouts run as they would behind a real partition.
func (p *pipe) waitRoom(lastDelay time.Duration) bool {
	for {
		blocked, _, changed := p.link.gate()
		if blocked {
			return true
		}
		limit := p.pc.f.opts.QueueLimit
		if bw := p.link.cfg.Load().Bandwidth; bw > 0 {
			bdp := int64(bw * (lastDelay + bottleneckQueue).Seconds())
			limit = min(max(bdp, minQueue), limit)
		}
		p.mu.Lock()
		room := p.queued < limit
		p.mu.Unlock()
		if room {
			return true
		}
		select {
		case <-p.space:
		case <-changed:
		case <-p.pc.done:
			return false
		}
	}
}

// push queues c; it reports false if the connection was closed because a
// partition held too much.
func (p *pipe) push(c chunk) bool {
	n := int64(len(c.data))
	p.mu.Lock()
	p.q = append(p.q, c)
	p.queued += n
	queued := p.queued
	p.mu.Unlock()
	p.link.held.Add(n)
	signal(p.avail)
	if blocked, _, _ := p.link.gate(); blocked && queued > p.pc.f.opts.HoldLimit {
		p.link.overflows.Add(1)
		p.pc.f.opts.Logf("network: %s -> %s: partition holds %d bytes (limit %d), closing the connection",
			p.link.from, p.link.to, queued, p.pc.f.opts.HoldLimit)
		p.pc.abort()
		return false
	}
	return true
}

// head returns the oldest queued chunk, waiting for one.
func (p *pipe) head() (chunk, bool) {
	for {
		p.mu.Lock()
		if len(p.q) > 0 {
			c := p.q[0]
			p.mu.Unlock()
			return c, true
		}
		p.mu.Unlock()
		select {
		case <-p.avail:
		case <-p.pc.done:
			return chunk{}, false
		}
	}
}

// pop removes the chunk head returned, once delivered.
func (p *pipe) pop() {
	p.mu.Lock()
	c := p.q[0]
	p.q[0] = chunk{}
	p.q = p.q[1:]
	p.queued -= int64(len(c.data))
	p.mu.Unlock()
	p.link.held.Add(-int64(len(c.data)))
	if c.buf != nil {
		bufPool.Put(c.buf)
	}
	signal(p.space)
}

// drop forgets undelivered chunks after the connection ended.
func (p *pipe) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.q {
		p.link.held.Add(-int64(len(c.data)))
		if c.buf != nil {
			bufPool.Put(c.buf)
		}
	}
	p.q, p.queued = nil, 0
}

// write releases chunks in order, each at the time releaseAt gives it.
// While the link is blocked it waits for the heal.
func (p *pipe) write() {
	defer p.pc.loopDone()
	clock := p.pc.f.opts.Clock
	// Made on first use: a timer made and stopped at once would show as a
	// sleeper, for an instant, to a test stepping a fake clock.
	var timer clockwork.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var prevTxEnd, prevRelease time.Time
	for {
		c, ok := p.head()
		if !ok {
			return
		}
		var txEnd, release time.Time
		for {
			blocked, healAt, changed := p.link.gate()
			if blocked {
				p.link.gated.Add(1)
				select {
				case <-changed:
					p.link.gated.Add(-1)
					continue
				case <-p.pc.done:
					p.link.gated.Add(-1)
					return
				}
			}
			txEnd, release = releaseAt(c, prevTxEnd, prevRelease, healAt)
			wait := clock.Until(release)
			if wait <= 0 {
				break
			}
			// A timer, not a polling sleep: precision is the point. A block
			// or heal meanwhile wakes it through changed; a wake-up before
			// the release (a stale tick after Stop) only goes round again.
			if timer == nil {
				timer = clock.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.Chan():
			case <-changed:
				timer.Stop()
			case <-p.pc.done:
				return
			}
		}
		prevTxEnd, prevRelease = txEnd, release
		if c.eof {
			p.pop()
			if err := p.dst.CloseWrite(); err != nil {
				p.pc.abort()
			}
			return
		}
		n, err := p.dst.Write(c.data)
		p.link.bytes.Add(int64(n))
		p.link.chunks.Add(1)
		p.pop()
		if err != nil {
			p.pc.abort()
			return
		}
	}
}
