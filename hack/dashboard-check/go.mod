// The Grafana dashboard validator that hack/tools.sh builds (main.go).
module dbbench.io/hack/dashboard-check

go 1.24.0

require github.com/grafana/grafana-foundation-sdk/go v0.0.22
