// The Go side of the compatibility harness: scenarios of the official Apache RocketMQ Go client
// (github.com/apache/rocketmq-client-go/v2), one per subcommand, each printing PASS or
// FAIL: reason. Run as: compat-go SCENARIO --namesrv HOST:PORT --broker HOST:PORT --id UNIQUE.
package main

import (
	"fmt"
	"os"
	"sort"
)

var scenarios = map[string]func(args){
	"send":         scenarioSend,
	"clustering":   scenarioClustering,
	"resume":       scenarioResume,
	"broadcasting": scenarioBroadcasting,
	"auto-create":  scenarioAutoCreate,
	"tag-filter":   scenarioTagFilter,
	"orderly":      scenarioOrderly,
	"delay":        scenarioDelay,
	"transaction":  scenarioTransaction,
	"retry":        scenarioRetry,
}

func main() {
	if len(os.Args) < 2 || scenarios[os.Args[1]] == nil {
		var names []string
		for n := range scenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: compat-go SCENARIO --namesrv H:P --broker H:P --id ID\nscenarios: %v\n", names)
		os.Exit(2)
	}
	a, err := parseArgs(os.Args[2:])
	if err != nil {
		fmt.Printf("FAIL: %v\n", err)
		os.Exit(1)
	}
	setupLogging()
	run(scenarios[os.Args[1]], a)
	fmt.Println("PASS")
	// The client's background goroutines do not stop everything on Shutdown; the scenario is done.
	os.Exit(0)
}

func run(f func(args), a args) {
	defer func() {
		if r := recover(); r != nil {
			if fl, ok := r.(failure); ok {
				fmt.Printf("FAIL: %s\n", fl.reason)
				os.Exit(1)
			}
			panic(r)
		}
	}()
	f(a)
}
