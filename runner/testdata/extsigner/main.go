// extsigner is a remote signer valnet's team did not write: CometBFT's own
// privval.SignerServer over a privval.FilePV, dialing the node with
// privval.DialTCPFn (SecretConnection) or privval.DialUnixFn, as a KMS
// does. The runner's tests run it as a separate process against a
// scenario with signer type external.
//
//	extsigner -addr tcp://127.0.0.1:26659 -chain-id c -home DIR [-identity-seed S] [-dialect v1|v0.38] [-sparse]
//
// It prints "address <validator address>" and, for tcp, "identity
// <SecretConnection identity>" on stdout, then signs until SIGTERM.
//
// -dialect v0.38 speaks tendermint.privval as CometBFT v0.34-v0.40 and
// their signers do (tmkms, horcrux): its own loop over CometBFT's
// generated v1beta2 messages, whose PubKeyResponse carries the key in
// field 1. -sparse answers SignVote and SignProposal as horcrux does
// (signer/remote_signer.go): only timestamp, signature and extension
// signature set; type, height, round and block_id are zero.
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

	privvalproto "github.com/cometbft/cometbft/api/cometbft/privval/v1"
	pvbeta2 "github.com/cometbft/cometbft/api/cometbft/privval/v1beta2"
	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cryptoenc "github.com/cometbft/cometbft/crypto/encoding"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/libs/protoio"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"
)

func main() {
	addr := flag.String("addr", "", "the node's address: tcp://host:port or unix:///path")
	chainID := flag.String("chain-id", "", "the chain ID")
	home := flag.String("home", "", "directory of priv_validator_key.json and priv_validator_state.json (created)")
	idSeed := flag.String("identity-seed", "extsigner", "secret the SecretConnection key is derived from")
	dialect := flag.String("dialect", "v1", "privval layout: v1 (CometBFT v1's SignerServer) or v0.38 (tendermint.privval)")
	sparse := flag.Bool("sparse", false, "answer sign requests with only timestamp, signature and extension signature, as horcrux does")
	corrupt := flag.Bool("corrupt", false, "flip a bit of every signature (a signer whose signatures do not verify)")
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
	var signer types.PrivValidator = pv
	if *corrupt {
		signer = corrupting{pv}
	}
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
	switch *dialect {
	case "v1":
	case "v0.38":
		go serveV038(dial, signer, *chainID, *sparse, logger)
		waitSignal()
	default:
		fmt.Fprintln(os.Stderr, "extsigner: -dialect must be v1 or v0.38")
		os.Exit(2)
	}
	endpoint := privval.NewSignerDialerEndpoint(logger, dial,
		privval.SignerDialerEndpointConnRetries(600), privval.SignerDialerEndpointRetryWaitInterval(100*time.Millisecond))
	server := privval.NewSignerServer(endpoint, *chainID, signer)
	if *sparse {
		server.SetRequestHandler(func(pv types.PrivValidator, req privvalproto.Message, chainID string) (privvalproto.Message, error) {
			res, err := privval.DefaultValidationRequestHandler(pv, req, chainID)
			switch r := res.Sum.(type) {
			case *privvalproto.Message_SignedVoteResponse:
				if r.SignedVoteResponse.Error == nil {
					v := r.SignedVoteResponse.Vote
					r.SignedVoteResponse.Vote = cmtproto.Vote{Timestamp: v.Timestamp, Signature: v.Signature, ExtensionSignature: v.ExtensionSignature}
				}
			case *privvalproto.Message_SignedProposalResponse:
				if r.SignedProposalResponse.Error == nil {
					p := r.SignedProposalResponse.Proposal
					r.SignedProposalResponse.Proposal = cmtproto.Proposal{Timestamp: p.Timestamp, Signature: p.Signature}
				}
			}
			return res, err
		})
	}
	if err := server.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "extsigner:", err)
		os.Exit(1)
	}
	waitSignal()
}

// waitSignal exits on SIGTERM or Ctrl-C. CometBFT's dialer cannot be
// stopped while it redials (600 tries): exit at once, as a killed KMS
// would.
func waitSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	os.Exit(0)
}

// serveV038 is a signer loop in tendermint.privval's layout, as a v0.38
// KMS runs it: dial, then answer each request, and dial again when the
// connection is lost.
func serveV038(dial privval.SocketDialer, pv types.PrivValidator, chainID string, sparse bool, logger cmtlog.Logger) {
	for {
		conn, err := dial()
		if err != nil {
			time.Sleep(100 * time.Millisecond) // a KMS's redial pause
			continue
		}
		r := protoio.NewDelimitedReader(conn, 10*1024)
		w := protoio.NewDelimitedWriter(conn)
		for {
			var req pvbeta2.Message
			if _, err := r.ReadMsg(&req); err != nil {
				logger.Error("read", "err", err)
				break
			}
			res := answerV038(pv, &req, chainID, sparse)
			if _, err := w.WriteMsg(res); err != nil {
				logger.Error("write", "err", err)
				break
			}
		}
		conn.Close()
	}
}

func answerV038(pv types.PrivValidator, req *pvbeta2.Message, chainID string, sparse bool) *pvbeta2.Message {
	refuse := func(what string) *pvbeta2.RemoteSignerError {
		return &pvbeta2.RemoteSignerError{Code: 0, Description: what}
	}
	switch r := req.Sum.(type) {
	case *pvbeta2.Message_PingRequest:
		return &pvbeta2.Message{Sum: &pvbeta2.Message_PingResponse{PingResponse: &pvbeta2.PingResponse{}}}
	case *pvbeta2.Message_PubKeyRequest:
		res := &pvbeta2.PubKeyResponse{}
		if r.PubKeyRequest.ChainId != chainID {
			res.Error = refuse("unable to provide pubkey: want chain " + chainID)
		} else if pub, err := pv.GetPubKey(); err != nil {
			res.Error = refuse(err.Error())
		} else if pk, err := cryptoenc.PubKeyToProto(pub); err != nil {
			res.Error = refuse(err.Error())
		} else {
			res.PubKey = pk
		}
		return &pvbeta2.Message{Sum: &pvbeta2.Message_PubKeyResponse{PubKeyResponse: res}}
	case *pvbeta2.Message_SignVoteRequest:
		res := &pvbeta2.SignedVoteResponse{}
		vote := r.SignVoteRequest.Vote
		switch {
		case vote == nil:
			res.Error = refuse("no vote")
		case r.SignVoteRequest.ChainId != chainID:
			res.Error = refuse("unable to sign vote: want chain " + chainID)
		default:
			// tendermint.privval has no skip_extension_signing: a v0.38
			// node expects an extension signature on every non-nil
			// precommit, and v0.37 ignores it.
			if err := pv.SignVote(chainID, vote, true); err != nil {
				res.Error = refuse(err.Error())
			} else if sparse {
				res.Vote = cmtproto.Vote{Timestamp: vote.Timestamp, Signature: vote.Signature, ExtensionSignature: vote.ExtensionSignature}
			} else {
				res.Vote = *vote
			}
		}
		return &pvbeta2.Message{Sum: &pvbeta2.Message_SignedVoteResponse{SignedVoteResponse: res}}
	case *pvbeta2.Message_SignProposalRequest:
		res := &pvbeta2.SignedProposalResponse{}
		p := r.SignProposalRequest.Proposal
		switch {
		case p == nil:
			res.Error = refuse("no proposal")
		case r.SignProposalRequest.ChainId != chainID:
			res.Error = refuse("unable to sign proposal: want chain " + chainID)
		default:
			if err := pv.SignProposal(chainID, p); err != nil {
				res.Error = refuse(err.Error())
			} else if sparse {
				res.Proposal = cmtproto.Proposal{Timestamp: p.Timestamp, Signature: p.Signature}
			} else {
				res.Proposal = *p
			}
		}
		return &pvbeta2.Message{Sum: &pvbeta2.Message_SignedProposalResponse{SignedProposalResponse: res}}
	}
	// What horcrux answers to a request it does not know (a v1 node's
	// SignBytes): an empty message.
	return &pvbeta2.Message{}
}

// corrupting signs, then flips a bit of the signature: it never verifies.
type corrupting struct{ types.PrivValidator }

func (c corrupting) SignVote(chainID string, v *cmtproto.Vote, ext bool) error {
	err := c.PrivValidator.SignVote(chainID, v, ext)
	if err == nil && len(v.Signature) > 0 {
		v.Signature[0] ^= 0x80
	}
	return err
}

func (c corrupting) SignProposal(chainID string, p *cmtproto.Proposal) error {
	err := c.PrivValidator.SignProposal(chainID, p)
	if err == nil && len(p.Signature) > 0 {
		p.Signature[0] ^= 0x80
	}
	return err
}
