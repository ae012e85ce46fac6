package sim

// cores are k CPUs every node's consensus work shares (run.sim.shared_cores):
// a task waits for the core that frees first. Off by default: a real
// chain gives each validator its own machine. valnet's crosscheck turns
// it on to compare with real runs on a host with k cores.
type cores struct {
	k    int
	free []int64
}

func newCores(k int) *cores { return &cores{k: k, free: make([]int64, k)} }

// run is when a task of cost ready at t ends.
func (c *cores) run(t, cost int64) int64 {
	best := 0
	for i := 1; i < c.k; i++ {
		if c.free[i] < c.free[best] {
			best = i
		}
	}
	start := max(t, c.free[best])
	c.free[best] = start + cost
	return start + cost
}
