package sim

import (
	"fmt"
	"time"

	"github.com/valnet/valnet/internal/cmtversion"
	"github.com/valnet/valnet/scenarios"
)

// ConfigKeys are the node.config keys the sim models: any other would
// change a real node and not the model, so the runner refuses it before
// the run (runner's checkNodeConfig reads this list).
var ConfigKeys = []string{"consensus.peer_gossip_sleep_duration", "p2p.flush_throttle_timeout", "p2p.send_rate"}

// paramsFor is the calibration plan names with what the scenario says of
// the node software: the CometBFT line's own defaults where they differ
// from v1.0's (the calibration was fitted on v1.0.1 nodes), then
// node.config's keys the sim models (ConfigKeys). Each figure
// is from that line's config/config.go (cmtversion).
func paramsFor(plan *scenarios.Plan) (Params, cmtversion.Line, error) {
	p, err := LoadParams(plan.Run.Sim.Calibration)
	if err != nil {
		return p, cmtversion.Line{}, err
	}
	line := cmtversion.Default()
	if v := plan.Node.Version; v != "" {
		if line, err = cmtversion.Lookup(v); err != nil {
			return p, line, err
		}
	}
	if line.Name != cmtversion.Default().Name {
		// p2p.flush_throttle_timeout: a connection flushes at most this
		// often (p2p/conn/connection.go's flushTimer).
		p.FlushThrottle = line.FlushThrottle
	}
	for _, s := range plan.Node.Config {
		switch s.Key {
		case "p2p.flush_throttle_timeout", "consensus.peer_gossip_sleep_duration":
			d, err := configDuration(s)
			if err != nil {
				return p, line, err
			}
			if s.Key == "p2p.flush_throttle_timeout" {
				p.FlushThrottle = d
			} else {
				p.GossipSleep = d
			}
		case "p2p.send_rate":
			r, ok := s.Value.(int64)
			if !ok || r <= 0 {
				return p, line, fmt.Errorf("%s: node.config.p2p.send_rate: want bytes per second, an integer > 0, got %v", s.Pos, s.Value)
			}
			p.SendRate = float64(r)
		default:
			// Not one of ConfigKeys: refused before the run, with every
			// other problem (runner.Preflight).
		}
	}
	return p, line, nil
}

func configDuration(s scenarios.ConfigSetting) (time.Duration, error) {
	str, ok := s.Value.(string)
	d, err := time.ParseDuration(str)
	if !ok || err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: node.config.%s: want a duration > 0 such as \"10ms\", got %v", s.Pos, s.Key, s.Value)
	}
	return d, nil
}
