package sim

// voteSet is one node's votes of one type in one round of a height: power
// per block (a block is named by the round it was created in; nil is -1)
// and who has voted. It answers what CometBFT's types.VoteSet answers for
// the transitions of state.go: TwoThirdsMajority, HasTwoThirdsAny, HasAll.
type voteSet struct {
	have    []uint64 // bitset of validator indexes
	of      []int32  // the block each validator voted for
	sum     int64    // power of every vote
	count   int
	byBlock []blockPower
}

type blockPower struct {
	block int32
	power int64
}

func newVoteSet(n int) *voteSet {
	return &voteSet{have: make([]uint64, (n+63)/64), of: make([]int32, n)}
}

func (v *voteSet) has(i int32) bool { return v.have[i/64]&(1<<(uint(i)%64)) != 0 }

// add counts the vote of validator i (power) for block; false when i has
// voted already (a duplicate).
func (v *voteSet) add(i int32, power int64, block int32) bool {
	if v.has(i) {
		return false
	}
	v.have[i/64] |= 1 << (uint(i) % 64)
	v.of[i] = block
	v.sum += power
	v.count++
	for k := range v.byBlock {
		if v.byBlock[k].block == block {
			v.byBlock[k].power += power
			return true
		}
	}
	v.byBlock = append(v.byBlock, blockPower{block, power})
	return true
}

// majority is the block (or nil, -1) with more than 2/3 of total power.
func (v *voteSet) majority(total int64) (int32, bool) {
	for _, bp := range v.byBlock {
		if bp.power*3 > total*2 {
			return bp.block, true
		}
	}
	return 0, false
}

// anyTwoThirds: more than 2/3 of total power voted, for anything.
func (v *voteSet) anyTwoThirds(total int64) bool { return v.sum*3 > total*2 }

// all: every validator voted.
func (v *voteSet) all(n int) bool { return v.count == n }

func (v *voteSet) powerFor(block int32) int64 {
	for _, bp := range v.byBlock {
		if bp.block == block {
			return bp.power
		}
	}
	return 0
}

// roundVotes are a node's prevotes and precommits of one round.
type roundVotes struct {
	prevotes, precommits *voteSet
}

// heightVotes are a node's votes of its current height by round, as
// CometBFT's HeightVoteSet keeps them.
type heightVotes struct {
	n      int
	rounds []roundVotes
}

func (h *heightVotes) reset(n int) {
	h.n = n
	h.rounds = h.rounds[:0]
}

func (h *heightVotes) at(r int32) *roundVotes {
	for int(r) >= len(h.rounds) {
		h.rounds = append(h.rounds, roundVotes{newVoteSet(h.n), newVoteSet(h.n)})
	}
	return &h.rounds[r]
}

func (h *heightVotes) set(r int32, precommit bool) *voteSet {
	rv := h.at(r)
	if precommit {
		return rv.precommits
	}
	return rv.prevotes
}

func (v *voteSet) clone() *voteSet {
	c := *v
	c.have = append([]uint64(nil), v.have...)
	c.of = append([]int32(nil), v.of...)
	c.byBlock = append([]blockPower(nil), v.byBlock...)
	return &c
}
