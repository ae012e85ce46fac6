package nodes

import (
	"testing"
	"time"

	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/results/eventlog"
)

// TestBlockEventCarriesTxs: a block event names each transaction by
// eventlog.TxHash (how tx events name them) and gives the block's size.
func TestBlockEventCarriesTxs(t *testing.T) {
	txs := types.Txs{types.Tx("aaaa0000=vvv"), types.Tx("bbbb0001=vvv")}
	b := &types.Block{Header: types.Header{Height: 3, Time: time.Unix(1, 0)}, Data: types.Data{Txs: txs}}
	tr := &translator{node: "v-1", valSet: &types.ValidatorSet{}}
	e := tr.block(time.Now(), types.EventDataNewBlock{Block: b})
	if e.Txs != 2 || len(e.TxHashes) != 2 || e.TxHashes[0] != eventlog.TxHash(txs[0]) || e.TxHashes[1] != eventlog.TxHash(txs[1]) {
		t.Errorf("txs %d, hashes %v; want 2 in block order", e.Txs, e.TxHashes)
	}
	if e.BlockBytes != b.Size() || e.BlockBytes < len(txs[0])+len(txs[1]) {
		t.Errorf("block_bytes %d, block size %d", e.BlockBytes, b.Size())
	}
	empty := tr.block(time.Now(), types.EventDataNewBlock{Block: &types.Block{Header: types.Header{Height: 4}}})
	if empty.TxHashes != nil || empty.BlockBytes == 0 {
		t.Errorf("empty block: hashes %v, bytes %d", empty.TxHashes, empty.BlockBytes)
	}
}
