package runner

import ()

// processYAML: four validators as OS processes behind shaped links; one is
// killed and comes back, one is cut off for a while.
const processYAML = `
name: e2e-process
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {backend: process, heights: 14, max_duration: 3m}
network:
  latency: 2ms
validators:
  - name: v
    count: 3
  - name: kms
    signer: {type: local, via: tcp}
faults:
  - {action: node-kill, target: v-2, at: {height: 4}, duration: 2s}
  - {action: isolate, target: v-3, at: {height: 9}, duration: 2s}
  - {action: node-stop, target: v-1, at: {height: 11}, duration: 1s}
expect:
  - {metric: heights_committed, min: 14}
  - {metric: double_signs, max: 0}
`
