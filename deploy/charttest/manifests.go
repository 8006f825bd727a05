package charttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Manifest is one rendered Kubernetes object: where it came from, its
// JSON, and its decoded value (a k8s.io/api type, or a map for the
// Inference Extension's custom resources).
type Manifest struct {
	Source     string // the template, e.g. tadpole/templates/deployment.yaml
	APIVersion string
	Kind       string
	Name       string
	JSON       []byte
	Object     any
}

// typed are the kinds the chart renders, as Kubernetes API types.
var typed = map[string]func() any{
	"apps/v1/Deployment":                           func() any { return &appsv1.Deployment{} },
	"v1/Service":                                   func() any { return &corev1.Service{} },
	"v1/Secret":                                    func() any { return &corev1.Secret{} },
	"v1/ServiceAccount":                            func() any { return &corev1.ServiceAccount{} },
	"policy/v1/PodDisruptionBudget":                func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":       func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"inference.networking.k8s.io/v1/InferencePool": nil, // CRD schema
	"inference.networking.x-k8s.io/v1alpha2/InferenceObjective": nil,
}

// Decode splits rendered templates into objects and decodes each
// strictly: a field the API type does not have, a duplicate field or a
// field spelled in another case is an error, as the API server's strict
// field validation (kubectl apply --validate=strict) reports it. Custom
// resources are checked against their CRD's schema instead.
func Decode(rendered map[string]string, crds *CRDSchemas) ([]Manifest, error) {
	names := make([]string, 0, len(rendered))
	for n := range rendered {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Manifest
	var errs []error
	for _, src := range names {
		if !strings.HasSuffix(src, ".yaml") {
			continue // NOTES.txt, helpers
		}
		for i, doc := range splitDocs(rendered[src]) {
			m, err := decodeOne(src, doc, crds)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s (document %d): %w", src, i+1, err))
				continue
			}
			out = append(out, m)
		}
	}
	return out, errors.Join(errs...)
}

// splitDocs splits a YAML stream at its "---" lines, dropping documents
// that hold only comments or blanks.
func splitDocs(s string) []string {
	var docs []string
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		cur = nil
		for _, l := range strings.Split(doc, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, doc)
				return
			}
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimRight(l, " ") == "---" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return docs
}

func decodeOne(src, doc string, crds *CRDSchemas) (Manifest, error) {
	m := Manifest{Source: src}
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return m, fmt.Errorf("not YAML: %w", err)
	}
	m.JSON = js
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &head); err != nil {
		return m, err
	}
	m.APIVersion, m.Kind, m.Name = head.APIVersion, head.Kind, head.Metadata.Name
	gvk := head.APIVersion + "/" + head.Kind
	newObj, known := typed[gvk]
	if !known {
		return m, fmt.Errorf("kind %s is not one the chart is known to render", gvk)
	}
	if newObj == nil {
		obj, err := crds.Validate(head.APIVersion, head.Kind, js)
		if err != nil {
			return m, err
		}
		// The schema leaves metadata open: decode it as the API server does.
		var parts map[string]json.RawMessage
		if err := json.Unmarshal(js, &parts); err != nil {
			return m, err
		}
		if err := strict(parts["metadata"], &metav1.ObjectMeta{}); err != nil {
			return m, fmt.Errorf("metadata: %w", err)
		}
		m.Object = obj
		return m, nil
	}
	obj := newObj()
	if err := strict(js, obj); err != nil {
		return m, fmt.Errorf("%s %q: %w", gvk, m.Name, err)
	}
	m.Object = obj
	return m, nil
}

// strict decodes js into v, refusing unknown, duplicate and mis-cased
// fields (the API server's strict decoding).
func strict(js []byte, v any) error {
	serr, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(serr...)
}

// CRDSchemas holds the openAPIV3Schema of custom resources, by
// apiVersion and kind, compiled as JSON Schemas.
type CRDSchemas struct {
	schemas map[string]*jsonschema.Schema
}

// LoadCRDs reads every CustomResourceDefinition in dir.
func LoadCRDs(dir string) (*CRDSchemas, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	c := &CRDSchemas{schemas: map[string]*jsonschema.Schema{}}
	comp := jsonschema.NewCompiler()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd struct {
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
				Versions []struct {
					Name   string `json:"name"`
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			key := crd.Spec.Group + "/" + v.Name + "/" + crd.Spec.Names.Kind
			url := "mem:///" + key + ".json"
			closeObjects(v.Schema.OpenAPIV3Schema)
			if err := comp.AddResource(url, v.Schema.OpenAPIV3Schema); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			s, err := comp.Compile(url)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			c.schemas[key] = s
		}
	}
	return c, nil
}

// closeObjects makes every object schema with properties refuse other
// properties, as the API server prunes them (a field the CRD does not
// know is lost, i.e. a mistake in the chart); objects marked
// x-kubernetes-preserve-unknown-fields or with additionalProperties of
// their own stay open.
func closeObjects(s map[string]any) {
	if _, ok := s["properties"]; ok {
		_, has := s["additionalProperties"]
		if preserve, _ := s["x-kubernetes-preserve-unknown-fields"].(bool); !has && !preserve {
			s["additionalProperties"] = false
		}
	}
	for _, k := range []string{"properties", "patternProperties"} {
		if props, ok := s[k].(map[string]any); ok {
			for _, p := range props {
				if ps, ok := p.(map[string]any); ok {
					closeObjects(ps)
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if ps, ok := s[k].(map[string]any); ok {
			closeObjects(ps)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok {
			for _, p := range list {
				if ps, ok := p.(map[string]any); ok {
					closeObjects(ps)
				}
			}
		}
	}
}

// Validate checks a custom resource against its CRD's schema and returns
// it decoded.
func (c *CRDSchemas) Validate(apiVersion, kind string, js []byte) (any, error) {
	s, ok := c.schemas[apiVersion+"/"+kind]
	if !ok {
		return nil, fmt.Errorf("no CRD schema for %s %s", apiVersion, kind)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return nil, err
	}
	if err := s.Validate(v); err != nil {
		return nil, fmt.Errorf("%s %s: %w", apiVersion, kind, err)
	}
	return v, nil
}
