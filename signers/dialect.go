package signers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	privvalproto "github.com/cometbft/cometbft/api/cometbft/privval/v1"
	pvbeta2 "github.com/cometbft/cometbft/api/cometbft/privval/v1beta2"
	cryptoenc "github.com/cometbft/cometbft/crypto/encoding"
	"google.golang.org/protobuf/encoding/protowire"
)

// Two privval dialects are in production, and they differ on the wire in
// one message. CometBFT v0.34 to v0.40 speak tendermint.privval, whose
// PubKeyResponse carries the key as `tendermint.crypto.PublicKey pub_key
// = 1`; v1 speaks cometbft.privval.v1, whose PubKeyResponse carries
// `bytes pub_key_bytes = 3` and `string pub_key_type = 4` and reserves 1
// (cometbft PR #2890). Package names do not reach the wire; field numbers
// do. Every other message valnet exchanges (Ping, SignVote with its
// extension, SignProposal, RemoteSignerError) has the same fields in both;
// v1 adds SignBytes (9, 10) and SignVoteRequest.skip_extension_signing
// (3), which an older peer skips as an unknown field.
//
// valnet's privval code is CometBFT v1's. A dialectConn sits between it
// and the connection (after SecretConnection) and rewrites PubKeyResponse
// frames: those a peer sends into v1's layout (so both dialects are
// accepted, whatever the peer), and those valnet sends into the peer's.

// Dialect is the privval layout a peer speaks.
type Dialect string

const (
	// DialectAuto answers PubKey in both layouts at once: each version
	// reads its own fields and skips the other's (protobuf skips unknown
	// fields), so any node understands it.
	DialectAuto Dialect = "auto"
	// DialectV038 is tendermint.privval: CometBFT v0.34 to v0.40.
	DialectV038 Dialect = "v0.38"
	// DialectV1 is cometbft.privval.v1: CometBFT v1.
	DialectV1 Dialect = "v1"
)

// Dialects lists the values a scenario or a flag may name.
var Dialects = []Dialect{DialectAuto, DialectV038, DialectV1}

// ParseDialect reads a dialect name; "" is auto. v0.37 (and v0.34, v0.39,
// v0.40) are accepted as the v0.38 layout they share.
func ParseDialect(s string) (Dialect, error) {
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "v") {
	case "", "auto":
		return DialectAuto, nil
	case "0.34", "0.37", "0.38", "0.39", "0.40":
		return DialectV038, nil
	case "1", "1.0":
		return DialectV1, nil
	}
	return "", fmt.Errorf("unknown privval dialect %q (allowed: auto, v0.38 (also for v0.34, v0.37, v0.39, v0.40), v1)", s)
}

// Field numbers of the messages a dialectConn rewrites.
const (
	msgPubKeyResponse   protowire.Number = 2 // Message.pub_key_response, both dialects
	pubKeyRespKey038    protowire.Number = 1 // PubKeyResponse.pub_key (v0.38)
	pubKeyRespError     protowire.Number = 2 // PubKeyResponse.error (both)
	pubKeyRespKeyBytes  protowire.Number = 3 // PubKeyResponse.pub_key_bytes (v1)
	pubKeyRespKeyType   protowire.Number = 4 // PubKeyResponse.pub_key_type (v1)
	maxDialectFrameSize                  = 64 << 10
)

// dialectConn rewrites PubKeyResponse frames: read ones into v1's layout,
// written ones into out's. It records the layout the peer used.
type dialectConn struct {
	net.Conn
	out Dialect

	rmu   sync.Mutex
	rin   []byte // bytes read, not yet a whole frame
	rout  []byte // translated bytes not yet returned
	rerr  error
	wmu   sync.Mutex
	win   []byte
	saw   atomic.Value // Dialect of the peer's last PubKeyResponse
	rbuf  []byte
	wrote bool
}

func newDialectConn(c net.Conn, out Dialect) *dialectConn {
	return &dialectConn{Conn: c, out: out, rbuf: make([]byte, 4096)}
}

// PeerDialect is the layout of the last PubKeyResponse the peer sent, ""
// before any.
func (c *dialectConn) PeerDialect() Dialect {
	d, _ := c.saw.Load().(Dialect)
	return d
}

func (c *dialectConn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.rout) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		n, err := c.Conn.Read(c.rbuf)
		c.rin = append(c.rin, c.rbuf[:n]...)
		for {
			frame, rest, ok, ferr := splitFrame(c.rin)
			if ferr != nil {
				// Not privval framing: hand it on as it is and let the
				// protocol code say what is wrong.
				c.rout, c.rin = append(c.rout, c.rin...), nil
				break
			}
			if !ok {
				break
			}
			t, saw := frameToV1(frame)
			if saw != "" {
				c.saw.Store(saw)
			}
			c.rout = appendFrame(c.rout, t)
			c.rin = rest
		}
		if err != nil {
			c.rerr = err
			if len(c.rout) == 0 && len(c.rin) > 0 {
				c.rout, c.rin = c.rin, nil // a torn frame: the reader sees it end short
			}
		}
	}
	n := copy(b, c.rout)
	c.rout = c.rout[n:]
	return n, nil
}

func (c *dialectConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.win = append(c.win, b...)
	var out []byte
	for {
		frame, rest, ok, err := splitFrame(c.win)
		if err != nil {
			out, c.win = append(out, c.win...), nil
			break
		}
		if !ok {
			break
		}
		out = appendFrame(out, frameFromV1(frame, c.out))
		c.win = rest
	}
	if len(out) > 0 {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

var errFrameTooLarge = errors.New("privval frame too large")

// splitFrame takes one length-delimited frame (a uvarint length, then the
// message) off the front of b; ok is false when b holds no whole frame yet.
func splitFrame(b []byte) (frame, rest []byte, ok bool, err error) {
	size, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return nil, b, false, nil
	case n < 0 || size > maxDialectFrameSize:
		return nil, b, false, errFrameTooLarge
	case uint64(len(b)-n) < size:
		return nil, b, false, nil
	}
	end := n + int(size)
	return b[n:end], b[end:], true, nil
}

func appendFrame(b, msg []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(msg)))
	return append(b, msg...)
}

// pubKeyResponseBody is the PubKeyResponse inside a privval Message, nil
// if the message is another one.
func pubKeyResponseBody(msg []byte) []byte {
	num, typ, n := protowire.ConsumeTag(msg)
	if n < 0 || num != msgPubKeyResponse || typ != protowire.BytesType {
		return nil
	}
	body, m := protowire.ConsumeBytes(msg[n:])
	if m < 0 || n+m != len(msg) {
		return nil
	}
	if body == nil {
		body = []byte{}
	}
	return body
}

// pubKeyFields says which layout's key fields a PubKeyResponse holds.
func pubKeyFields(body []byte) (old, v1 bool) {
	for len(body) > 0 {
		num, typ, n := protowire.ConsumeTag(body)
		if n < 0 {
			return old, v1
		}
		m := protowire.ConsumeFieldValue(num, typ, body[n:])
		if m < 0 {
			return old, v1
		}
		switch num {
		case pubKeyRespKey038:
			old = true
		case pubKeyRespKeyBytes, pubKeyRespKeyType:
			v1 = true
		}
		body = body[n+m:]
	}
	return old, v1
}

// frameToV1 rewrites a PubKeyResponse in v0.38's layout into v1's; any
// other frame is returned as it is. saw is the layout the frame used (""
// for frames that are not a PubKeyResponse or carry no key).
func frameToV1(msg []byte) ([]byte, Dialect) {
	body := pubKeyResponseBody(msg)
	if body == nil {
		return msg, ""
	}
	old, v1 := pubKeyFields(body)
	switch {
	case v1 && old:
		return msg, DialectAuto
	case v1:
		return msg, DialectV1
	case !old:
		return msg, "" // an error answer: the same in both
	}
	var r pvbeta2.PubKeyResponse
	if err := r.Unmarshal(body); err != nil {
		return msg, DialectV038
	}
	resp := &privvalproto.PubKeyResponse{}
	if r.Error != nil {
		resp.Error = &privvalproto.RemoteSignerError{Code: r.Error.Code, Description: r.Error.Description}
	}
	if pub, err := cryptoenc.PubKeyFromProto(r.PubKey); err == nil {
		resp.PubKeyType, resp.PubKeyBytes = pub.Type(), pub.Bytes()
	} else if resp.Error == nil {
		resp.Error = &privvalproto.RemoteSignerError{Description: "the signer's public key (v0.38 layout): " + err.Error()}
	}
	out, err := (&privvalproto.Message{Sum: &privvalproto.Message_PubKeyResponse{PubKeyResponse: resp}}).Marshal()
	if err != nil {
		return msg, DialectV038
	}
	return out, DialectV038
}

// frameFromV1 rewrites a PubKeyResponse valnet wrote (v1's layout) into
// dialect d's; any other frame is returned as it is.
func frameFromV1(msg []byte, d Dialect) []byte {
	if d == DialectV1 {
		return msg
	}
	body := pubKeyResponseBody(msg)
	if body == nil {
		return msg
	}
	var r privvalproto.PubKeyResponse
	if err := r.Unmarshal(body); err != nil || len(r.PubKeyBytes) == 0 {
		return msg // an error answer: the same in both
	}
	pub, err := cryptoenc.PubKeyFromTypeAndBytes(r.PubKeyType, r.PubKeyBytes)
	if err != nil {
		return msg
	}
	pk, err := cryptoenc.PubKeyToProto(pub)
	if err != nil {
		return msg
	}
	old := &pvbeta2.PubKeyResponse{PubKey: pk}
	if r.Error != nil {
		old.Error = &pvbeta2.RemoteSignerError{Code: r.Error.Code, Description: r.Error.Description}
	}
	ob, err := old.Marshal()
	if err != nil {
		return msg
	}
	if d == DialectAuto {
		// v0.38's field 1 and v1's fields 3 and 4 side by side; the error
		// field (2) only once.
		var v1only privvalproto.PubKeyResponse
		v1only.PubKeyBytes, v1only.PubKeyType = r.PubKeyBytes, r.PubKeyType
		vb, err := v1only.Marshal()
		if err != nil {
			return msg
		}
		ob = append(bytes.Clone(ob), vb...)
	}
	out := protowire.AppendTag(nil, msgPubKeyResponse, protowire.BytesType)
	return protowire.AppendBytes(out, ob)
}

// dialectDial makes every connection dial returns speak d.
func dialectDial(dial func() (net.Conn, error), d Dialect) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		c, err := dial()
		if err != nil {
			return nil, err
		}
		return newDialectConn(c, d), nil
	}
}
