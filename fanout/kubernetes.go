package fanout

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"splitbrain/cluster/docker"
	"splitbrain/suite"
)

// A Job as Kubernetes objects: an Indexed Job (completionMode: Indexed),
// its pods' completion index as the shard, its pods writing into one
// volume claim; a NetworkPolicy that lets them talk to nothing (a play's
// traffic is on the pod's loopback); and, for after the Job, a gather pod
// that checks and assembles the run folders (`fanout gather`) and serves
// them on its loopback for `kubectl port-forward` and `kubectl cp`.
//
// The objects are written from the minimal structs below, a mirror of the
// fields of the Kubernetes API used here, with the API's field names; the
// package's test decodes the manifest strictly into the API's own types
// (k8s.io/api), so a field the API does not have fails there. Only the
// test imports them: the harness does not carry Kubernetes' client types.

type kObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   kMeta  `yaml:"metadata"`
	Spec       any    `yaml:"spec"`
}

type kMeta struct {
	Name   string            `yaml:"name,omitempty"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

type kPVCSpec struct {
	AccessModes      []string   `yaml:"accessModes"`
	StorageClassName string     `yaml:"storageClassName,omitempty"`
	Resources        kResources `yaml:"resources"`
}

type kResources struct {
	Requests map[string]string `yaml:"requests,omitempty"`
	Limits   map[string]string `yaml:"limits,omitempty"`
}

type kJobSpec struct {
	CompletionMode string       `yaml:"completionMode"`
	Completions    int          `yaml:"completions"`
	Parallelism    int          `yaml:"parallelism"`
	BackoffLimit   int          `yaml:"backoffLimit"`
	Template       kPodTemplate `yaml:"template"`
}

type kPodTemplate struct {
	Metadata kMeta    `yaml:"metadata"`
	Spec     kPodSpec `yaml:"spec"`
}

type kPodSpec struct {
	RestartPolicy                string       `yaml:"restartPolicy"`
	AutomountServiceAccountToken bool         `yaml:"automountServiceAccountToken"`
	EnableServiceLinks           bool         `yaml:"enableServiceLinks"`
	SecurityContext              kPodSecurity `yaml:"securityContext"`
	InitContainers               []kContainer `yaml:"initContainers,omitempty"`
	Containers                   []kContainer `yaml:"containers"`
	Volumes                      []kVolume    `yaml:"volumes"`
}

type kPodSecurity struct {
	RunAsNonRoot   bool     `yaml:"runAsNonRoot"`
	RunAsUser      int      `yaml:"runAsUser"`
	RunAsGroup     int      `yaml:"runAsGroup"`
	FSGroup        int      `yaml:"fsGroup"`
	SeccompProfile kSeccomp `yaml:"seccompProfile"`
}

type kSeccomp struct {
	Type string `yaml:"type"`
}

type kContainer struct {
	Name            string         `yaml:"name"`
	Image           string         `yaml:"image"`
	ImagePullPolicy string         `yaml:"imagePullPolicy"`
	Args            []string       `yaml:"args"`
	Env             []kEnv         `yaml:"env,omitempty"`
	SecurityContext kSecurity      `yaml:"securityContext"`
	Resources       kResources     `yaml:"resources"`
	VolumeMounts    []kVolumeMount `yaml:"volumeMounts"`
}

type kEnv struct {
	Name      string      `yaml:"name"`
	Value     string      `yaml:"value,omitempty"`
	ValueFrom *kEnvSource `yaml:"valueFrom,omitempty"`
}

type kEnvSource struct {
	FieldRef kFieldRef `yaml:"fieldRef"`
}

type kFieldRef struct {
	FieldPath string `yaml:"fieldPath"`
}

type kSecurity struct {
	AllowPrivilegeEscalation bool          `yaml:"allowPrivilegeEscalation"`
	Capabilities             kCapabilities `yaml:"capabilities"`
}

type kCapabilities struct {
	Drop []string `yaml:"drop"`
}

type kVolumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

type kVolume struct {
	Name                  string    `yaml:"name"`
	PersistentVolumeClaim kClaimRef `yaml:"persistentVolumeClaim"`
}

type kClaimRef struct {
	ClaimName string `yaml:"claimName"`
}

type kPolicySpec struct {
	PodSelector kSelector `yaml:"podSelector"`
	PolicyTypes []string  `yaml:"policyTypes"`
}

type kSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

// KubeOptions are what a cluster decides: the volume claim's size and
// storage class (one whose volumes many pods on many nodes can write:
// ReadWriteMany), and the CPU each task asks for.
type KubeOptions struct {
	Storage      string
	StorageClass string
	CPU          string
}

// completionIndex is where a pod of an Indexed Job finds its index: the
// annotation the Job controller sets on it (Kubernetes 1.21 and later).
const completionIndex = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

// KubeName is the name of the objects of a job: the same for the same
// image, arguments and tasks, so that the gather pod written later names
// the job's volume claim.
func KubeName(j Job) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", j.Image, j.Tasks, strings.Join(j.Args, "\x00"))))
	return "splitbrain-fanout-" + hex.EncodeToString(h[:])[:10]
}

// KubernetesJob writes the job as a volume claim, a NetworkPolicy and an
// Indexed Job, as one YAML stream for kubectl apply -f.
func KubernetesJob(j Job, o KubeOptions) ([]byte, error) {
	name := KubeName(j)
	labels := kubeLabels(name)
	claim := kObject{APIVersion: "v1", Kind: "PersistentVolumeClaim", Metadata: kMeta{Name: name, Labels: labels},
		Spec: kPVCSpec{AccessModes: []string{"ReadWriteMany"}, StorageClassName: o.StorageClass,
			Resources: kResources{Requests: map[string]string{"storage": o.Storage}}}}
	policy := kObject{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy", Metadata: kMeta{Name: name, Labels: labels},
		Spec: kPolicySpec{PodSelector: kSelector{MatchLabels: labels}, PolicyTypes: []string{"Ingress", "Egress"}}}
	task := container("shard", j, j.Args, o)
	task.Env = []kEnv{
		{Name: "SPLITBRAIN_SHARD_INDEX", ValueFrom: &kEnvSource{FieldRef: kFieldRef{FieldPath: completionIndex}}},
		// An earlier variable of the container's, which Kubernetes
		// expands: 0/4, 1/4, ...
		{Name: suite.ShardEnv, Value: "$(SPLITBRAIN_SHARD_INDEX)/" + strconv.Itoa(j.Tasks)},
	}
	job := kObject{APIVersion: "batch/v1", Kind: "Job", Metadata: kMeta{Name: name, Labels: labels},
		Spec: kJobSpec{CompletionMode: "Indexed", Completions: j.Tasks, Parallelism: j.Tasks,
			// A share played twice would be in the matrix twice: a pod
			// that fails is reported, never run again.
			BackoffLimit: 0,
			Template:     kPodTemplate{Metadata: kMeta{Labels: labels}, Spec: podSpec(name, nil, task)}}}
	return yamlStream(claim, policy, job)
}

// KubernetesGather writes the gather pod of the job: it checks and
// assembles the run folders of every share once the Job has completed
// (fanout gather, an init container), then serves the store on its
// loopback until deleted.
func KubernetesGather(j Job, o KubeOptions) ([]byte, error) {
	name := KubeName(j)
	labels := kubeLabels(name)
	gather := container("gather", j, j.Gather, o)
	serve := container("serve", j, []string{"serve", "--store", Store, "--addr", "127.0.0.1:8040"}, KubeOptions{CPU: "100m"})
	pod := kObject{APIVersion: "v1", Kind: "Pod", Metadata: kMeta{Name: name + "-gather", Labels: labels},
		Spec: podSpec(name, []kContainer{gather}, serve)}
	return yamlStream(pod)
}

func kubeLabels(name string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "splitbrain", "splitbrain.fanout": name}
}

func container(name string, j Job, args []string, o KubeOptions) kContainer {
	limits := map[string]string{}
	if j.Memory > 0 {
		limits["memory"] = strconv.FormatInt(j.Memory>>20, 10) + "Mi"
	}
	return kContainer{
		Name: name, Image: j.Image,
		// Built on a machine, not pulled: loaded into the nodes (kind load
		// docker-image) or pushed to the cluster's registry under this name.
		ImagePullPolicy: "IfNotPresent",
		Args:            args,
		SecurityContext: kSecurity{AllowPrivilegeEscalation: false, Capabilities: kCapabilities{Drop: []string{"ALL"}}},
		Resources:       kResources{Requests: map[string]string{"cpu": o.CPU}, Limits: limits},
		VolumeMounts:    []kVolumeMount{{Name: "store", MountPath: docker.RunnerStore}},
	}
}

func podSpec(claim string, init []kContainer, c kContainer) kPodSpec {
	return kPodSpec{
		RestartPolicy: "Never",
		SecurityContext: kPodSecurity{RunAsNonRoot: true, RunAsUser: docker.RunnerUID, RunAsGroup: docker.RunnerUID,
			FSGroup: docker.RunnerUID, SeccompProfile: kSeccomp{Type: "RuntimeDefault"}},
		InitContainers: init,
		Containers:     []kContainer{c},
		Volumes:        []kVolume{{Name: "store", PersistentVolumeClaim: kClaimRef{ClaimName: claim}}},
	}
}

func yamlStream(objs ...kObject) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, o := range objs {
		if err := enc.Encode(o); err != nil {
			return nil, fmt.Errorf("kubernetes manifest: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("kubernetes manifest: %w", err)
	}
	return b.Bytes(), nil
}
