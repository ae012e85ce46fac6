// extsigner is a remote signer valnet's team did not write: CometBFT's own
// privval.SignerServer over a privval.FilePV, dialing the node with
// privval.DialTCPFn (SecretConnection) or privval.DialUnixFn, as a KMS
// does. The runner's tests run it as a separate process against a
// scenario with signer type external.
//
//	extsigner -addr tcp://127.0.0.1:26659 -chain-id c -home DIR [-identity-seed S]
//
// It prints "address <validator address>" and, for tcp, "identity
// <SecretConnection identity>" on stdout, then signs until SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/privval"
)

func main() {
	addr := flag.String("addr", "", "the node's address: tcp://host:port or unix:///path")
	chainID := flag.String("chain-id", "", "the chain ID")
	home := flag.String("home", "", "directory of priv_validator_key.json and priv_validator_state.json (created)")
	idSeed := flag.String("identity-seed", "extsigner", "secret the SecretConnection key is derived from")
	flag.Parse()
	if *addr == "" || *chainID == "" || *home == "" {
		fmt.Fprintln(os.Stderr, "extsigner: -addr, -chain-id and -home are required")
		os.Exit(2)
	}
	pv, err := privval.LoadOrGenFilePV(filepath.Join(*home, "priv_validator_key.json"), filepath.Join(*home, "priv_validator_state.json"),
		func() (crypto.PrivKey, error) { return ed25519.GenPrivKey(), nil })
	if err != nil {
		fmt.Fprintln(os.Stderr, "extsigner:", err)
		os.Exit(1)
	}
	pub, _ := pv.GetPubKey()
	fmt.Printf("address %X\n", pub.Address())
	var dial privval.SocketDialer
	switch {
	case strings.HasPrefix(*addr, "tcp://"):
		key := ed25519.GenPrivKeyFromSecret([]byte(*idSeed))
		fmt.Printf("identity %X\n", key.PubKey().Address())
		dial = privval.DialTCPFn(strings.TrimPrefix(*addr, "tcp://"), 3*time.Second, key)
	case strings.HasPrefix(*addr, "unix://"):
		dial = privval.DialUnixFn(strings.TrimPrefix(*addr, "unix://"))
	default:
		fmt.Fprintln(os.Stderr, "extsigner: -addr must be tcp:// or unix://")
		os.Exit(2)
	}
	logger := cmtlog.NewTMLogger(cmtlog.NewSyncWriter(os.Stderr))
	endpoint := privval.NewSignerDialerEndpoint(logger, dial,
		privval.SignerDialerEndpointConnRetries(600), privval.SignerDialerEndpointRetryWaitInterval(100*time.Millisecond))
	server := privval.NewSignerServer(endpoint, *chainID, pv)
	if err := server.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "extsigner:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	// CometBFT's dialer cannot be stopped while it redials (600 tries):
	// exit at once, as a killed KMS would.
	os.Exit(0)
}
