package scenarios

// MetricInfo describes a metric that `expect:` entries may name. The results
// package computes each of them from events.jsonl; a test there checks that
// every metric listed here is implemented.
type MetricInfo struct {
	Name         string
	PerValidator bool   // true: the entry may (and usually does) name a validator
	Phased       bool   // true: the entry may name a phase
	Load         bool   // true: only a scenario with load: has it
	Device       bool   // true: only a validator on a shared device (signer.device) has it
	Doc          string // one line for docs and error messages
}

// Metrics lists every metric an expectation may name, in documentation order.
var Metrics = []MetricInfo{
	{Name: "heights_committed", Doc: "number of heights committed during the run"},
	{Name: "heights_with_round_change", Doc: "committed heights whose commit round is > 0"},
	{Name: "max_commit_round", Doc: "largest commit round of any committed height"},
	{Name: "extra_rounds", Doc: "sum of commit rounds over committed heights"},
	{Name: "block_interval_p50_ms", Doc: "median time between consecutive commits, ms"},
	{Name: "block_interval_p95_ms", Doc: "95th percentile time between consecutive commits, ms"},
	{Name: "block_interval_max_ms", Doc: "longest time between consecutive commits, ms"},
	{Name: "double_signs", Doc: "conflicting signatures by one validator for the same height/round/step"},
	{Name: "halts", Doc: "stretches with no commit longer than the halt threshold (from the network's start, between commits, or to the end)"},
	{Name: "halts_unresumed", Doc: "halts the chain did not come back from before the run ended"},
	{Name: "halts_validators_down", Doc: "halts caused by nodes down: the others hold no +2/3 of the power"},
	{Name: "halts_partition", Doc: "halts caused by a partition or isolation no side of which holds +2/3"},
	{Name: "halts_signer_failed", Doc: "halts caused by votes whose signature failed (CometBFT does not retry it)"},
	{Name: "halts_signature_invalid", Doc: "halts caused by votes whose signature did not verify and was withheld"},
	{Name: "halts_signer_conflict", Doc: "halts caused by votes a double-sign rule withheld"},
	{Name: "halts_signer_not_answering", Doc: "halts caused by signers that never returned a requested signature"},
	{Name: "halts_network", Doc: "halts in which enough votes were signed but no node received +2/3"},
	{Name: "halts_no_proposal", Doc: "halts in which rounds kept failing for want of a proposal"},
	{Name: "halts_host_overload", Doc: "halts on a saturated host, with nothing else to blame"},
	{Name: "halts_unknown", Doc: "halts no event explains"},
	{Name: "missed_precommits", PerValidator: true, Doc: "heights whose next block's LastCommit has the validator absent"},
	{Name: "nil_precommits", PerValidator: true, Doc: "heights whose next block's LastCommit has the validator voting nil"},
	{Name: "missed_blocks", PerValidator: true, Doc: "same as missed_precommits, under the name operators' alerting uses"},
	{Name: "missed_precommits_rate", PerValidator: true, Doc: "missed_precommits / precommits_counted (the heights whose next block's LastCommit was examined); no value when none were"},
	{Name: "nil_precommits_rate", PerValidator: true, Doc: "nil_precommits / precommits_counted; no value when none were counted"},
	{Name: "missed_blocks_rate", PerValidator: true, Doc: "missed_blocks / precommits_counted; no value when none were counted"},
	{Name: "consecutive_missed_max", PerValidator: true, Doc: "longest run of consecutive heights with the validator absent from the next block's LastCommit"},
	{Name: "late_prevotes", PerValidator: true, Doc: "rounds whose prevote reached most other nodes after they already had +2/3 prevotes"},
	{Name: "late_precommits", PerValidator: true, Doc: "rounds whose precommit reached most other nodes after they already had +2/3 precommits"},
	{Name: "quorum_critical", PerValidator: true, Doc: "heights whose quorum waited for the validator's precommit (among the first +2/3 the deciding node received)"},
	{Name: "proposals_made", PerValidator: true, Doc: "proposals the validator signed on its proposer turns"},
	{Name: "proposals_missed", PerValidator: true, Doc: "proposer turns (height, round) without a signed proposal"},
	{Name: MetricSignErrors, PerValidator: true, Doc: "signatures the node asked for that did not reach it (an error answer, an invalid signature, a double-sign refusal, no answer), injected or not"},
	{Name: MetricSignErrorsUnexplained, PerValidator: true, Doc: "sign errors no fault on the validator (its node, signer or cosigners) explains; every scenario that names neither sign error metric expects 0 of these"},
	{Name: "sign_latency_p50_ms", PerValidator: true, Phased: true, Doc: "median signing latency, ms"},
	{Name: "sign_latency_p99_ms", PerValidator: true, Phased: true, Doc: "99th percentile signing latency, ms"},
	{Name: "sign_latency_max_ms", PerValidator: true, Phased: true, Doc: "largest signing latency, ms"},
	{Name: "sign_queue_p50_ms", PerValidator: true, Device: true, Doc: "median wait in a shared device's queue before the device started on a signature, ms"},
	{Name: "sign_queue_p99_ms", PerValidator: true, Device: true, Doc: "99th percentile wait in a shared device's queue, ms"},
	{Name: "sign_queue_max_ms", PerValidator: true, Device: true, Doc: "longest wait in a shared device's queue, ms"},
	{Name: "txs_sent", Load: true, Doc: "load transactions submitted (accepted + rejected + failed)"},
	{Name: "txs_rejected", Load: true, Doc: "load transactions a node answered with an error (CheckTx code or mempool refusal)"},
	{Name: "txs_failed", Load: true, Doc: "load transactions without an answer (node down, connection error, timeout)"},
	{Name: "txs_committed", Load: true, Doc: "accepted load transactions found in a committed block"},
	{Name: "tx_per_s", Load: true, Doc: "committed load transactions per second, from the first submission to the last block that carried one"},
	{Name: "tx_commit_latency_p50_ms", Load: true, Doc: "median time from a transaction's submission to the commit of its block, ms"},
	{Name: "tx_commit_latency_p95_ms", Load: true, Doc: "95th percentile time from submission to commit, ms"},
	{Name: "tx_commit_latency_max_ms", Load: true, Doc: "longest time from submission to commit, ms"},
}

// LookupMetric returns the metric named name.
func LookupMetric(name string) (MetricInfo, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricInfo{}, false
}
