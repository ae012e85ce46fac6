// Command prebuild builds, ahead of make integ, the stock cometbft
// binaries its tests run (testbin.BuildCometBFT: into
// $VALNET_COMETBFT_CACHE or the user cache, where the tests find them).
// .ci/run starts it (make prebuild) at the lowest CPU priority beside
// make test, whose real networks leave cores idle while they wait on
// timers, and waits for it before make integ, whose timing checks need
// the host to itself.
//
//	go run ./internal/testbin/prebuild v0.38.26 v1.0.1
//	go run ./internal/testbin/prebuild -lines v0.38,v1.0   (the tested release of each line)
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/cmtversion"
	"github.com/valnet/valnet/internal/testbin"
)

func main() {
	lines := flag.String("lines", "", "comma-separated CometBFT lines (v0.37 ... v1.0, or all): build each one's tested release")
	flag.Parse()
	versions := flag.Args()
	if *lines != "" {
		names := strings.Split(*lines, ",")
		if *lines == "all" {
			names = cmtversion.Names()
		}
		for _, n := range names {
			l, err := cmtversion.Lookup(strings.TrimSpace(n))
			if err != nil {
				fmt.Fprintln(os.Stderr, "prebuild: -lines:", err)
				os.Exit(2)
			}
			versions = append(versions, l.Tested)
		}
	}
	if len(versions) == 0 {
		fmt.Fprintln(os.Stderr, "prebuild: no version given (a release such as v0.38.26, or -lines v0.38,v1.0)")
		os.Exit(2)
	}
	for _, v := range versions {
		start := time.Now()
		bin, err := testbin.BuildCometBFT(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "prebuild:", err)
			os.Exit(1)
		}
		fmt.Printf("prebuild: cometbft %s: %s (%s)\n", v, bin, time.Since(start).Round(time.Second))
	}
}
