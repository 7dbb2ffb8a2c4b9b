package deploy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generated are the monitoring component's files made from
// deploy/prometheus and deploy/grafana, which kustomize cannot read (they
// are outside the component's folder): go test -run TestGenerated -update .
var generated = map[string]func(t *testing.T) string{
	"kubernetes/components/monitoring/prometheusrule.yaml": func(t *testing.T) string {
		return header("prometheus/alerts.yml") + `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: rlstore
  labels:
    app.kubernetes.io/name: rlstore
spec:
` + indent(readFile(t, "prometheus/alerts.yml"), "  ")
	},
	"kubernetes/components/monitoring/dashboard.yaml": func(t *testing.T) string {
		return header("grafana/rlstore.json") + `apiVersion: v1
kind: ConfigMap
metadata:
  name: rlstore-dashboard
  labels:
    app.kubernetes.io/name: rlstore
    grafana_dashboard: "1"
data:
  rlstore.json: |
` + indent(readFile(t, "grafana/rlstore.json"), "    ")
	},
}

func header(from string) string {
	return "# Generated from deploy/" + from + " by deploy/generated_test.go: do not edit.\n" +
		"# Regenerate with: cd deploy && go test -run TestGenerated -update .\n"
}

// indent prefixes every non-empty line.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestGenerated(t *testing.T) {
	for path, gen := range generated {
		want := gen(t)
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		assert.Equal(t, want, readFile(t, path), "%s is out of date: go test -run TestGenerated -update .", path)
	}
}
