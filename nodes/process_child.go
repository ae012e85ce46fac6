package nodes

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	dbm "github.com/cometbft/cometbft-db"
	"github.com/cometbft/cometbft/abci/example/kvstore"
	cfg "github.com/cometbft/cometbft/config"
	cmtflags "github.com/cometbft/cometbft/libs/cli/flags"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/proxy"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/unixsock"
	"github.com/valnet/valnet/results/eventlog"
)

// NodeOptions configure RunNode (`valnet node`).
type NodeOptions struct {
	Home string
	// Events is where to stream eventlog.Event JSON lines: "unix:///path"
	// (the process backend listens there) or "tcp://HOST:PORT" (the docker
	// backend with a remote engine); "" streams nothing.
	Events string
	// Name is the node's name in events; default: the config's moniker.
	Name string
	// ProxyApp is the address of the node's own ABCI application (an app
	// process the runner started), over ABCI (socket or grpc); "": the
	// built-in kvstore.
	ProxyApp, ABCI string
}

// AppDir is where `valnet node` keeps its kvstore application, inside the
// data directory of a home: it persists, so a restarted node recovers.
const AppDir = "app"

// RunNode runs one CometBFT validator from a standard home (as written by
// WriteHome) until ctx ends, then stops it cleanly. It honours the home's
// config.toml (ports, peers, timeouts, priv_validator_laddr, log level),
// runs the built-in kvstore application persisted under data/app, and signs
// as `cometbft start` does: through the remote signer that dials
// priv_validator_laddr when it is set, else with the FilePV of the home.
// CometBFT's log goes to node.log in the home. An error means the node
// could not start (or failed); a clean stop returns nil.
func RunNode(ctx context.Context, o NodeOptions) (err error) {
	if o.Home == "" {
		return errors.New("no home directory (--home)")
	}
	// Everything this process creates is its owner's only: CometBFT
	// creates the priv_validator_laddr unix socket itself, with the
	// umask's mode, 0700 under this umask; it is narrowed to 0600 once
	// NewNode has it (docs/reliability.md). The runner, the same user,
	// reads the home either way.
	syscall.Umask(0o077)
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return err
	}
	c, unknown, err := loadConfig(home)
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(LogFile(c), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	defer logFile.Close()
	logger, err := childLogger(logFile, c)
	if err != nil {
		return err
	}
	for _, k := range unknown {
		logger.Info("unknown key in config.toml, ignored", "key", k)
	}
	gen, err := types.GenesisDocFromFile(c.GenesisFile())
	if err != nil {
		return fmt.Errorf("genesis: %w", err)
	}
	nodeKey, err := p2p.LoadNodeKey(c.NodeKeyFile())
	if err != nil {
		return fmt.Errorf("node key: %w", err)
	}
	pv, err := filePV(c)
	if err != nil {
		return err
	}
	name := o.Name
	if name == "" {
		name = c.Moniker
	}
	valSet, err := Validators(gen)
	if err != nil {
		return fmt.Errorf("genesis validators: %w", err)
	}
	var sink *socketSink
	if o.Events != "" {
		if sink, err = dialEvents(o.Events); err != nil {
			return err
		}
		defer sink.Close()
	}
	var clients proxy.ClientCreator
	if o.ProxyApp != "" {
		// As `cometbft start --proxy_app ADDR --abci T`: if the app's
		// connection dies, CometBFT ends this process.
		clients = proxy.NewRemoteClientCreator(o.ProxyApp, o.ABCI, true)
	} else {
		appDB, err := dbm.NewPebbleDB("kvstore", filepath.Join(c.DBDir(), AppDir))
		if err != nil {
			return fmt.Errorf("kvstore app: %w", err)
		}
		defer appDB.Close()
		clients = proxy.NewLocalClientCreator(kvstore.NewApplication(appDB))
	}

	n, err := node.NewNode(ctx, c, pv, nodeKey,
		clients,
		node.DefaultGenesisDocProviderFunc(c),
		dbProvider(logger),
		node.DefaultMetricsProvider(c.Instrumentation),
		logger)
	if err != nil {
		return err
	}
	if path, ok := strings.CutPrefix(c.PrivValidatorListenAddr, "unix://"); ok {
		if err := os.Chmod(path, unixsock.Mode); err != nil {
			return fmt.Errorf("signer socket: %w", err)
		}
	}
	pumpCtx, cancel := context.WithCancel(context.Background())
	var pumps sync.WaitGroup
	defer func() { cancel(); pumps.Wait() }() // no pump emits after sink.Close
	if sink != nil {
		tr := &translator{node: name, names: genesisNames(gen), valSet: valSet}
		// Before Start, so that no event of the first height is lost.
		if err := subscribeBus(pumpCtx, n.EventBus(), tr, sink, &pumps); err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
	}
	if err := n.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	select {
	case <-ctx.Done():
		logger.Info("valnet node: stopping on signal")
	case <-n.Quit():
		err = errors.New("node stopped by itself; see node.log")
	}
	if n.IsRunning() {
		if stopErr := n.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}
	n.Wait()
	return err
}

// filePV is the home's FilePV when no remote signer is configured, as
// `cometbft start` loads it; nil when priv_validator_laddr is set (the node
// then listens for its signer itself).
func filePV(c *cfg.Config) (types.PrivValidator, error) {
	if c.PrivValidatorListenAddr != "" {
		return nil, nil
	}
	// LoadFilePV exits the process on a missing file: check first, and
	// say what is missing.
	for _, f := range []string{c.PrivValidatorKeyFile(), c.PrivValidatorStateFile()} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("no priv_validator_laddr in config.toml and no FilePV: %w", err)
		}
	}
	return privval.LoadFilePV(c.PrivValidatorKeyFile(), c.PrivValidatorStateFile()), nil
}

// childLogger is CometBFT's logger as its cmd sets it up from config.toml:
// log_format and per-module log_level.
func childLogger(w io.Writer, c *cfg.Config) (cmtlog.Logger, error) {
	sw := cmtlog.NewSyncWriter(w)
	logger := cmtlog.NewTMLogger(sw)
	if c.LogFormat == cfg.LogFormatJSON {
		logger = cmtlog.NewTMJSONLogger(sw)
	}
	logger, err := cmtflags.ParseLogLevel(c.LogLevel, logger, cfg.DefaultLogLevel)
	if err != nil {
		return nil, fmt.Errorf("log_level: %w", err)
	}
	return logger, nil
}

// genesisNames maps validator addresses to the names the runner put in
// the genesis (GenesisValidator.Name), as the in-process Spec.Names does.
func genesisNames(gen *types.GenesisDoc) map[string]string {
	names := map[string]string{}
	for _, v := range gen.Validators {
		if v.Name != "" {
			names[strings.ToUpper(hex.EncodeToString(v.Address))] = v.Name
		}
	}
	return names
}

// socketSink writes events as JSON lines to the runner's event socket. A
// single writer goroutine drains a queue, so the event pumps never wait
// on the socket; events are flushed whenever the queue runs dry.
type socketSink struct {
	conn  net.Conn
	queue chan eventlog.Event
	done  chan struct{}
	once  sync.Once
}

// socketQueue is generous: a full queue drops the event (and says so in
// the stream) rather than stall the node's event bus.
const socketQueue = 100_000

func dialEvents(addr string) (*socketSink, error) {
	network, target := "unix", ""
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		target = path
	} else if hostport, ok := strings.CutPrefix(addr, "tcp://"); ok {
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			return nil, fmt.Errorf("--events %q: want tcp://HOST:PORT: %w", addr, err)
		}
		network, target = "tcp", hostport
	}
	if target == "" {
		return nil, fmt.Errorf("--events %q: want unix:///path/to/socket or tcp://HOST:PORT", addr)
	}
	conn, err := net.DialTimeout(network, target, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("event socket: %w", err)
	}
	s := &socketSink{conn: conn, queue: make(chan eventlog.Event, socketQueue), done: make(chan struct{})}
	go s.write()
	return s, nil
}

func (s *socketSink) Emit(e eventlog.Event) {
	select {
	case s.queue <- e:
	default:
		// Counted nowhere else: a hole in the stream must be visible.
		select {
		case s.queue <- eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: e.Node,
			Error: "event queue full; events dropped"}:
		default:
		}
	}
}

func (s *socketSink) write() {
	defer close(s.done)
	w := bufio.NewWriterSize(s.conn, 64<<10)
	enc := json.NewEncoder(w)
	broken := false
	for e := range s.queue {
		if broken {
			continue // the runner is gone; keep draining so Emit never blocks
		}
		if err := enc.Encode(e); err != nil {
			broken = true
			continue
		}
		if len(s.queue) == 0 {
			if err := w.Flush(); err != nil {
				broken = true
			}
		}
	}
	if !broken {
		_ = w.Flush()
	}
}

// Close flushes what is queued and closes the socket. Emit must not be
// called any more.
func (s *socketSink) Close() error {
	s.once.Do(func() {
		close(s.queue)
		<-s.done
	})
	return s.conn.Close()
}
