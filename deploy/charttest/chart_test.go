package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/tadpole"

// values reads a values file of the chart's ci/ directory (nil for "").
func values(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "ci", file))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// render renders the chart with vals and decodes every manifest.
func render(t *testing.T, vals map[string]any) []Manifest {
	t.Helper()
	crds, err := LoadCRDs("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(chartDir, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	ms, err := Decode(out, crds)
	if err != nil {
		for name, text := range out {
			t.Logf("--- %s\n%s", name, text)
		}
		t.Fatalf("decode: %v", err)
	}
	return ms
}

// chart is the rendered chart by kind.
type chart struct {
	deploy   *appsv1.Deployment
	service  *corev1.Service
	pdb      *policyv1.PodDisruptionBudget
	hpa      *autoscalingv2.HorizontalPodAutoscaler
	secrets  map[string]*corev1.Secret
	pools    []map[string]any
	objects  []map[string]any
	kinds    map[string]int
	manifest []Manifest
}

func index(t *testing.T, ms []Manifest) chart {
	t.Helper()
	c := chart{secrets: map[string]*corev1.Secret{}, kinds: map[string]int{}, manifest: ms}
	for _, m := range ms {
		c.kinds[m.Kind]++
		if errs := validation.IsDNS1123Subdomain(m.Name); len(errs) > 0 {
			t.Errorf("%s %q: name: %v", m.Kind, m.Name, errs)
		}
		switch o := m.Object.(type) {
		case *appsv1.Deployment:
			c.deploy = o
		case *corev1.Service:
			c.service = o
		case *policyv1.PodDisruptionBudget:
			c.pdb = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			c.hpa = o
		case *corev1.Secret:
			c.secrets[o.Name] = o
		case map[string]any:
			switch m.Kind {
			case "InferencePool":
				c.pools = append(c.pools, o)
			case "InferenceObjective":
				c.objects = append(c.objects, o)
			}
		}
	}
	if c.kinds["Deployment"] != 1 || c.kinds["Service"] != 1 {
		t.Fatalf("kinds rendered: %v", c.kinds)
	}
	return c
}

func (c chart) container(t *testing.T) corev1.Container {
	t.Helper()
	for _, ct := range c.deploy.Spec.Template.Spec.Containers {
		if ct.Name == "tadpole" {
			return ct
		}
	}
	t.Fatal("no tadpole container")
	return corev1.Container{}
}

func env(ct corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range ct.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// checkCommon checks what every variant must hold: the selectors find
// the pods, the probes reach /readyz and /healthz on a declared port,
// the vLLM metric names are on, every mount has its volume, every label
// is valid, and the grace period outlasts the preStop sleep and drain.
func checkCommon(t *testing.T, c chart) {
	t.Helper()
	pod := c.deploy.Spec.Template
	podLabels := labels.Set(pod.Labels)
	for k, v := range pod.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			t.Errorf("pod label %s=%s: %v", k, v, errs)
		}
	}
	sel := labels.SelectorFromSet(c.deploy.Spec.Selector.MatchLabels)
	if !sel.Matches(podLabels) {
		t.Errorf("the Deployment's selector %v misses its pods %v", sel, podLabels)
	}
	if !labels.SelectorFromSet(c.service.Spec.Selector).Matches(podLabels) {
		t.Errorf("the Service's selector %v misses the pods", c.service.Spec.Selector)
	}
	if c.pdb != nil && !labels.SelectorFromSet(c.pdb.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Errorf("the PDB's selector misses the pods")
	}

	ct := c.container(t)
	ports := map[string]int32{}
	for _, p := range ct.Ports {
		if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
			t.Errorf("port %q: %v", p.Name, errs)
		}
		ports[p.Name] = p.ContainerPort
	}
	for _, sp := range c.service.Spec.Ports {
		if _, ok := ports[sp.TargetPort.StrVal]; !ok {
			t.Errorf("Service port %s targets %q, which the container does not declare", sp.Name, sp.TargetPort.StrVal)
		}
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", ct.ReadinessProbe, "/readyz"}, {"liveness", ct.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || ports[p.probe.HTTPGet.Port.StrVal] == 0 {
			t.Errorf("%s probe: %+v", p.name, p.probe)
		}
	}
	for _, e := range ct.Env {
		if errs := validation.IsEnvVarName(e.Name); len(errs) > 0 {
			t.Errorf("env %s: %v", e.Name, errs)
		}
	}
	if e, _ := env(ct, "TADPOLE_METRICS_COMPAT"); e.Value != "vllm" {
		t.Errorf("TADPOLE_METRICS_COMPAT = %q, want vllm", e.Value)
	}
	if e, _ := env(ct, "TADPOLE_PRELOAD"); e.Value == "" {
		t.Errorf("no model preloaded: readiness would not wait for one")
	}

	// The grace period covers the preStop sleep and the drain.
	e, _ := env(ct, "TADPOLE_DRAIN_TIMEOUT")
	drain, err := time.ParseDuration(e.Value)
	if err != nil {
		t.Fatalf("TADPOLE_DRAIN_TIMEOUT %q: %v", e.Value, err)
	}
	var sleep time.Duration
	if ct.Lifecycle != nil && ct.Lifecycle.PreStop != nil && ct.Lifecycle.PreStop.Sleep != nil {
		sleep = time.Duration(ct.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	grace := pod.Spec.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second <= drain+sleep {
		t.Errorf("terminationGracePeriodSeconds %v does not outlast preStop %v + drain %v", grace, sleep, drain)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	all := append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, ct := range all {
		for _, m := range ct.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				t.Errorf("container %s mounts %q, which is not a volume", ct.Name, m.Name)
			}
		}
	}
	for _, v := range volumes {
		if v.Secret != nil && !strings.HasPrefix(v.Secret.SecretName, "tadpole-") && c.secrets[v.Secret.SecretName] == nil {
			t.Errorf("volume %s: Secret %q is neither rendered nor an expected existing one", v.Name, v.Secret.SecretName)
		}
	}

	for _, p := range c.pools {
		spec := p["spec"].(map[string]any)
		ml := spec["selector"].(map[string]any)["matchLabels"].(map[string]any)
		set := labels.Set{}
		for k, v := range ml {
			set[k] = fmt.Sprint(v)
		}
		if !labels.SelectorFromSet(set).Matches(podLabels) {
			t.Errorf("the InferencePool's selector %v misses the pods", set)
		}
		port := spec["targetPorts"].([]any)[0].(map[string]any)["number"]
		if fmt.Sprint(port) != fmt.Sprint(ports["http"]) {
			t.Errorf("the InferencePool targets port %v, the API listens on %d", port, ports["http"])
		}
	}
	for _, o := range c.objects {
		ref := o["spec"].(map[string]any)["poolRef"].(map[string]any)["name"]
		found := false
		for _, p := range c.pools {
			found = found || p["metadata"].(map[string]any)["name"] == ref
		}
		if !found {
			t.Errorf("InferenceObjective %v names pool %v, which is not rendered", o["metadata"], ref)
		}
	}
}

func gpuLimit(ct corev1.Container) (int64, bool) {
	q, ok := ct.Resources.Limits["nvidia.com/gpu"]
	return q.Value(), ok
}

// The default values: the GPU deployment with models pulled by an init
// container, a PDB, the InferencePool and two objectives, no HPA.
func TestChartDefaults(t *testing.T) {
	c := index(t, render(t, values(t, "")))
	checkCommon(t, c)
	ct := c.container(t)
	if n, ok := gpuLimit(ct); !ok || n != 1 || ct.Resources.Requests["nvidia.com/gpu"] != ct.Resources.Limits["nvidia.com/gpu"] {
		t.Errorf("GPU resources: %+v", ct.Resources)
	}
	if _, ok := env(ct, "TADPOLE_JOB_MODELS"); ok {
		t.Errorf("TADPOLE_JOB_MODELS without PostgreSQL")
	}
	if len(c.deploy.Spec.Template.Spec.InitContainers) != 1 {
		t.Errorf("no init container pulls the models")
	}
	if c.pdb == nil || c.hpa != nil || len(c.pools) != 1 || len(c.objects) != 2 {
		t.Errorf("kinds: %v", c.kinds)
	}
	if c.deploy.Spec.Replicas == nil || *c.deploy.Spec.Replicas != 2 {
		t.Errorf("replicas: %v", c.deploy.Spec.Replicas)
	}
}

// The CPU variant asks for no GPU and tolerates no GPU taint.
func TestChartCPU(t *testing.T) {
	c := index(t, render(t, values(t, "cpu-values.yaml")))
	checkCommon(t, c)
	ct := c.container(t)
	for _, rl := range []corev1.ResourceList{ct.Resources.Limits, ct.Resources.Requests} {
		for name := range rl {
			if strings.Contains(string(name), "gpu") {
				t.Errorf("CPU variant asks for %s", name)
			}
		}
	}
	for _, tol := range c.deploy.Spec.Template.Spec.Tolerations {
		if strings.Contains(tol.Key, "gpu") {
			t.Errorf("CPU variant tolerates %s", tol.Key)
		}
	}
	if ct.Resources.Limits.Cpu().Value() != 8 {
		t.Errorf("CPU limit: %v", ct.Resources.Limits.Cpu())
	}
}

// The GPU variant with two GPUs a pod.
func TestChartGPU(t *testing.T) {
	c := index(t, render(t, values(t, "gpu-values.yaml")))
	checkCommon(t, c)
	ct := c.container(t)
	if n, _ := gpuLimit(ct); n != 2 {
		t.Errorf("GPUs: %d", n)
	}
	tolerated := false
	for _, tol := range c.deploy.Spec.Template.Spec.Tolerations {
		tolerated = tolerated || tol.Key == "nvidia.com/gpu"
	}
	if !tolerated {
		t.Errorf("no toleration of the GPU taint")
	}
}

// Everything on: the read-only model store, API keys, TLS, PostgreSQL,
// the HPA on queued requests.
func TestChartFull(t *testing.T) {
	c := index(t, render(t, values(t, "full-values.yaml")))
	checkCommon(t, c)
	ct := c.container(t)
	pod := c.deploy.Spec.Template.Spec

	if c.deploy.Spec.Replicas != nil {
		t.Errorf("replicas set beside the HPA: %d", *c.deploy.Spec.Replicas)
	}
	if c.hpa == nil || len(c.hpa.Spec.Metrics) != 1 {
		t.Fatalf("HPA: %+v", c.hpa)
	}
	m := c.hpa.Spec.Metrics[0]
	if m.Type != autoscalingv2.PodsMetricSourceType || m.Pods.Metric.Name != "tadpole_requests_waiting" ||
		m.Pods.Target.AverageValue.String() != "4" || c.hpa.Spec.ScaleTargetRef.Name != c.deploy.Name {
		t.Errorf("HPA metric: %+v", m)
	}

	db, ok := env(ct, "TADPOLE_DATABASE_URL")
	if !ok || db.ValueFrom == nil || db.ValueFrom.SecretKeyRef == nil || db.ValueFrom.SecretKeyRef.Name != "tadpole-postgres" || db.ValueFrom.SecretKeyRef.Key != "url" {
		t.Errorf("TADPOLE_DATABASE_URL: %+v", db)
	}
	if jm, _ := env(ct, "TADPOLE_JOB_MODELS"); jm.Value != "llama3.2:1b,nomic-embed-text" {
		t.Errorf("TADPOLE_JOB_MODELS: %+v", jm)
	}
	if ct.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || ct.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("probes over HTTP with TLS on")
	}
	tls, _ := env(ct, "TADPOLE_TLS_CERT")
	if tls.Value != "/etc/tadpole/tls/tls.crt" {
		t.Errorf("TADPOLE_TLS_CERT: %+v", tls)
	}
	var keys *corev1.Secret
	for _, s := range c.secrets {
		keys = s
	}
	if keys == nil || !strings.Contains(keys.StringData["keys"], "sha256:5e88") || !strings.Contains(keys.StringData["keys"], "sha256:a665") {
		t.Fatalf("API keys Secret: %+v", keys)
	}
	kf, _ := env(ct, "TADPOLE_API_KEYS_FILE")
	if kf.Value != "/etc/tadpole/keys/keys" {
		t.Errorf("TADPOLE_API_KEYS_FILE: %+v", kf)
	}
	if len(pod.InitContainers) != 0 {
		t.Errorf("init container with a model store on a PVC")
	}
	for _, v := range pod.Volumes {
		if v.Name == "models" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "tadpole-models" || !v.PersistentVolumeClaim.ReadOnly) {
			t.Errorf("models volume: %+v", v)
		}
	}
	if *pod.TerminationGracePeriodSeconds != 150 {
		t.Errorf("grace period %d", *pod.TerminationGracePeriodSeconds)
	}
	if len(c.objects) != 2 || c.pools[0]["metadata"].(map[string]any)["name"] != "tadpole-pool" {
		t.Errorf("pool and objectives: %v %v", c.pools, c.objects)
	}
	if l := c.deploy.Spec.Template.Labels; l["inference.networking.k8s.io/engine-type"] != "vllm" {
		t.Errorf("engine-type label: %v", l)
	}
}

// Bad values are refused at render time with a message naming them.
func TestChartBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals string
		want string
	}{
		{"unknown source", "models: {source: ftp}", "source"},
		{"misspelt key", "gpu: {enable: true}", "enable"},
		{"negative drain", "drain: {timeoutSeconds: -1}", "timeoutSeconds"},
		{"grace shorter than the drain", "terminationGracePeriodSeconds: 20", "must be larger than"},
		{"pvc without a claim", "models: {source: pvc, pvc: {existingClaim: ''}}", "existingClaim"},
		{"nothing to pull", "models: {preload: [], pull: {models: []}}", "nothing to pull"},
		{"bad failure mode", "inferencePool: {endpointPicker: {failureMode: Sometimes}}", "failureMode"},
		{"bad compat", "metrics: {compat: sglang}", "compat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]any
			if err := yaml.Unmarshal([]byte(tc.vals), &v); err != nil {
				t.Fatal(err)
			}
			_, err := Render(chartDir, v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render with %s: %v", tc.vals, err)
			}
		})
	}
}

// The decoder itself refuses what the API server would: an unknown
// field, a mis-cased one, a custom resource outside its schema.
func TestDecodeRefuses(t *testing.T) {
	crds, err := LoadCRDs("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ doc, want string }{
		{"apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {selectr: {a: b}}", `unknown field "spec.selectr"`},
		{"apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {Type: ClusterIP}", "spec.Type"},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec: {replicas: two}", "replicas"},
		{"apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: a}\nspec: {targetPorts: [{number: 1}], selector: {matchLabels: {a: b}}}", "endpointPickerRef"},
		{"apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: a}\nspec: {targetPorts: [{number: 1}], selector: {matchLabels: {a: b}}, endpointPickerRef: {name: e, port: {number: 9002}, failureMode: Maybe}}", "failureMode"},
		{"apiVersion: inference.networking.x-k8s.io/v1alpha2\nkind: InferenceObjective\nmetadata: {name: a}\nspec: {poolRef: {name: p}, criticality: Critical}", "criticality"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}", "not one the chart"},
	} {
		_, err := Decode(map[string]string{"t.yaml": tc.doc}, crds)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v, want %q", tc.doc, err, tc.want)
		}
	}
}
