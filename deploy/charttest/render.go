// Package charttest renders Tadpole's Helm chart (deploy/helm/tadpole)
// with Helm's own template engine and checks every manifest it makes: it
// is a module of its own so that the server's module never depends on
// Helm or the Kubernetes API.
package charttest

import (
	"fmt"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Render renders the chart in dir with the given values files merged
// over its defaults, as `helm template` would, and returns each template's
// output by name.
func Render(dir string, values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "demo", Namespace: "llm", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}
