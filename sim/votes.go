package sim

// voteSet is one node's votes of one type in one round of a height: power
// per block (a block is named by the round it was created in; nil is -1)
// and who has voted. It answers what CometBFT's types.VoteSet answers for
// the transitions of state.go: TwoThirdsMajority, HasTwoThirdsAny, HasAll.
// Who voted for what is a bitset per block (a vote set of 1,000
// validators is a few hundred bytes, which a node touches for every vote).
type voteSet struct {
	have    []uint64 // bitset of validator indexes
	sum     int64    // power of every vote
	count   int
	byBlock []blockPower
}

type blockPower struct {
	block  int32
	power  int64
	voters []uint64 // bitset: who voted for block
}

func newVoteSet(n int) *voteSet {
	return &voteSet{have: make([]uint64, (n+63)/64)}
}

func (v *voteSet) has(i int32) bool { return v.have[i/64]&(1<<(uint(i)%64)) != 0 }

// of is the block validator i voted for; i must have voted.
func (v *voteSet) of(i int32) int32 {
	w, bit := i/64, uint64(1)<<(uint(i)%64)
	for _, bp := range v.byBlock {
		if bp.voters[w]&bit != 0 {
			return bp.block
		}
	}
	panic("sim: voteSet.of a validator that has not voted")
}

// add counts the vote of validator i (power) for block; false when i has
// voted already (a duplicate).
func (v *voteSet) add(i int32, power int64, block int32) bool {
	w, bit := i/64, uint64(1)<<(uint(i)%64)
	if v.have[w]&bit != 0 {
		return false
	}
	v.have[w] |= bit
	v.sum += power
	v.count++
	for k := range v.byBlock {
		if bp := &v.byBlock[k]; bp.block == block {
			bp.power += power
			bp.voters[w] |= bit
			return true
		}
	}
	// a new block: the bitset of a block this set had before it was
	// cleared is used again
	var voters []uint64
	if k := len(v.byBlock); k < cap(v.byBlock) {
		voters = v.byBlock[:k+1][k].voters
		clear(voters)
	}
	if len(voters) != len(v.have) {
		voters = make([]uint64, len(v.have))
	}
	voters[w] |= bit
	v.byBlock = append(v.byBlock, blockPower{block, power, voters})
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
// CometBFT's HeightVoteSet keeps them. The sets of a height gone by are
// used again (a 1,000-validator network would otherwise make 8 MB of
// them a height), but for the one the node keeps as its LastCommit.
type heightVotes struct {
	rounds []roundVotes
	n      int
	spare  []*voteSet
	kept   *voteSet // the LastCommit kept at the last reset
}

// reset starts a new height; keep (the node's LastCommit, maybe one of
// this height's sets) is not used again while it is kept.
func (h *heightVotes) reset(n int, keep *voteSet) {
	if n != h.n {
		h.spare, h.kept = nil, nil
	}
	h.n = n
	recycle := func(v *voteSet) {
		if v != nil && v != keep && len(v.have) == (n+63)/64 {
			h.spare = append(h.spare, v)
		}
	}
	if h.kept != keep {
		recycle(h.kept)
	}
	for _, rv := range h.rounds {
		recycle(rv.prevotes)
		recycle(rv.precommits)
	}
	clear(h.rounds)
	h.rounds, h.kept = h.rounds[:0], keep
}

func (h *heightVotes) newSet() *voteSet {
	k := len(h.spare)
	if k == 0 {
		return newVoteSet(h.n)
	}
	v := h.spare[k-1]
	h.spare = h.spare[:k-1]
	clear(v.have)
	v.sum, v.count, v.byBlock = 0, 0, v.byBlock[:0]
	return v
}

func (h *heightVotes) at(r int32) *roundVotes {
	for int(r) >= len(h.rounds) {
		h.rounds = append(h.rounds, roundVotes{h.newSet(), h.newSet()})
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
	c.byBlock = make([]blockPower, len(v.byBlock))
	for k, bp := range v.byBlock {
		bp.voters = append([]uint64(nil), bp.voters...)
		c.byBlock[k] = bp
	}
	return &c
}
