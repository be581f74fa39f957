// Command dashboard-check validates Grafana dashboard JSON files against the
// dashboard model of the Grafana Foundation SDK (Apache-2.0, generated from
// Grafana's own CUE schemas): the classic "v1" dashboard JSON that Grafana's
// dashboard sidecar and provisioning load. Decoding is strict: an unknown key,
// a value of the wrong type or a missing required field is an error, and the
// panels' options, field configs and Prometheus queries are decoded with their
// plugins' types. Built into $TOOLS_DIR/bin by hack/tools.sh; used by
// tests/unit/chart/test_dashboard.py. docs/metrics.md says which Grafana it models.
//
// Usage: dashboard-check FILE...   Exit 0: every file is valid; 1: one is not
// (each error is printed as FILE: PATH: MESSAGE); 2: usage or unreadable file.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// problems is every error of one dashboard, one line each (PATH: MESSAGE).
func problems(raw []byte) []string {
	var board dashboard.Dashboard
	err := board.UnmarshalJSONStrict(raw)
	if err == nil {
		// Constraints the types alone do not carry (ranges, enums).
		err = board.Validate()
	}
	if err == nil {
		return nil
	}
	var built cog.BuildErrors
	if errors.As(err, &built) {
		lines := make([]string, 0, len(built))
		for _, e := range built {
			lines = append(lines, e.Error())
		}
		return lines
	}
	// Not JSON at all, or an array that is not one: no path to name.
	return []string{err.Error()}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dashboard-check FILE...")
		os.Exit(2)
	}
	// Without the registry, panel options and queries decode as free-form maps.
	plugins.RegisterDefaultPlugins()
	status := 0
	for _, path := range os.Args[1:] {
		raw, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		found := problems(raw)
		for _, line := range found {
			fmt.Printf("%s: %s\n", path, line)
		}
		if len(found) > 0 {
			status = 1
		}
	}
	os.Exit(status)
}
