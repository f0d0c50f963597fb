package fanout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"splitbrain/cluster/docker"
	"splitbrain/scenarios/spec"
	"splitbrain/suite"
)

// testSuite is a small suite: two stories against two locks, one of them
// n/a for one story, twice each.
func testSuite(t *testing.T) Suite {
	t.Helper()
	var scs []*spec.Scenario
	for _, n := range []string{"clock-jump", "partition-holder"} {
		sc, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	return Suite{Args: []string{"clock-jump", "partition-holder", "--runs", "2"}, Seed: 7, Runs: 2,
		Plan: suite.NewPlan(scs, []string{"redlock", "zookeeper"}, spec.BackendLocal)}
}

// decodeStrict decodes one YAML document into v, a Kubernetes API type,
// through JSON (the API's own encoding) refusing any field the type does
// not have: what `kubectl apply --validate=strict` refuses.
func decodeStrict(t *testing.T, doc map[string]any, v any) {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s %v: not a valid object of the API: %v", doc["kind"], doc["metadata"], err)
	}
}

func yamlDocs(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// The manifest of a job decodes strictly into the Kubernetes API's types
// (k8s.io/api), and says what the job means: an Indexed Job of one pod
// per task, none retried, each running the job's arguments and told its
// completion index as I/N, which --shard env reads and which names each
// share of the plan once; non-root, no capability, no privilege
// escalation; one volume claim that every pod mounts where the runner
// image's store is; a NetworkPolicy that selects the pods and lets them
// talk to nothing. The gather pod checks and assembles with the job's
// gather arguments, from the same claim.
func TestKubernetesManifest(t *testing.T) {
	t.Parallel()
	s := testSuite(t)
	const tasks = 3
	job, err := NewJob(s, "registry.example/splitbrain-runner:test", tasks)
	if err != nil {
		t.Fatal(err)
	}
	b, err := KubernetesJob(job, KubeOptions{Storage: "10Gi", StorageClass: "nfs", CPU: "1"})
	if err != nil {
		t.Fatal(err)
	}
	docs := yamlDocs(t, b)
	if len(docs) != 3 {
		t.Fatalf("%d objects, want a claim, a policy and a job:\n%s", len(docs), b)
	}
	var (
		pvc    corev1.PersistentVolumeClaim
		policy networkingv1.NetworkPolicy
		kjob   batchv1.Job
	)
	decodeStrict(t, docs[0], &pvc)
	decodeStrict(t, docs[1], &policy)
	decodeStrict(t, docs[2], &kjob)
	name := KubeName(job)
	for _, o := range []struct{ kind, api, wantKind, wantAPI, name string }{
		{pvc.Kind, pvc.APIVersion, "PersistentVolumeClaim", "v1", pvc.Name},
		{policy.Kind, policy.APIVersion, "NetworkPolicy", "networking.k8s.io/v1", policy.Name},
		{kjob.Kind, kjob.APIVersion, "Job", "batch/v1", kjob.Name},
	} {
		if o.kind != o.wantKind || o.api != o.wantAPI || o.name != name {
			t.Errorf("%s %s %q, want %s %s %q", o.api, o.kind, o.name, o.wantAPI, o.wantKind, name)
		}
	}
	if !dns1123.MatchString(name) || len(name) > 63 {
		t.Errorf("name %q is no DNS-1123 label", name)
	}
	if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) ||
		pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "nfs" || pvc.Spec.Resources.Requests.Storage().String() != "10Gi" {
		t.Errorf("claim %+v, want ReadWriteMany, class nfs, 10Gi", pvc.Spec)
	}

	js := kjob.Spec
	if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion ||
		js.Completions == nil || *js.Completions != tasks || js.Parallelism == nil || *js.Parallelism != tasks ||
		js.BackoffLimit == nil || *js.BackoffLimit != 0 {
		t.Errorf("job spec %+v: want Indexed, %d completions and pods at once, no retry", js, tasks)
	}
	pod := js.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
		t.Fatalf("pod restart %s, %d containers: want Never and one", pod.RestartPolicy, len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != job.Image || !slices.Equal(c.Args, job.Args) {
		t.Errorf("container %s %v, want %s %v", c.Image, c.Args, job.Image, job.Args)
	}
	checkSecurity(t, pod, c)
	checkStoreMount(t, pod, c, name)
	if !selects(policy.Spec.PodSelector.MatchLabels, js.Template.Labels) ||
		len(policy.Spec.Ingress)+len(policy.Spec.Egress) != 0 || len(policy.Spec.PolicyTypes) != 2 {
		t.Errorf("policy %+v does not shut the job's pods (labels %v) off", policy.Spec, js.Template.Labels)
	}

	// The index as Kubernetes gives it: an earlier variable of the
	// container's, expanded in the next one's value.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	idx := env["SPLITBRAIN_SHARD_INDEX"]
	if idx.ValueFrom == nil || idx.ValueFrom.FieldRef == nil ||
		idx.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Fatalf("SPLITBRAIN_SHARD_INDEX %+v, want the completion index annotation", idx)
	}
	if slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "SPLITBRAIN_SHARD_INDEX" }) >
		slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == suite.ShardEnv }) {
		t.Error("the index comes after the variable that refers to it: Kubernetes would not expand it")
	}
	if !slices.Contains(c.Args, "--shard") || c.Args[slices.Index(c.Args, "--shard")+1] != "env" {
		t.Errorf("args %v do not read the shard from %s", c.Args, suite.ShardEnv)
	}
	plays := Jobs(s)
	seen := map[suite.Job]int{}
	for i := range tasks {
		v := strings.ReplaceAll(env[suite.ShardEnv].Value, "$(SPLITBRAIN_SHARD_INDEX)", strconv.Itoa(i))
		sh, err := suite.ParseShard(v)
		if err != nil || sh != (suite.Shard{I: i, N: tasks}) {
			t.Fatalf("pod %d: %s=%q reads as %v, %v", i, suite.ShardEnv, v, sh, err)
		}
		for _, j := range sh.Share(plays) {
			seen[j]++
		}
	}
	for _, j := range plays {
		if seen[j] != 1 {
			t.Errorf("play %v is in %d shares, want 1", j, seen[j])
		}
	}

	g, err := KubernetesGather(job, KubeOptions{CPU: "1"})
	if err != nil {
		t.Fatal(err)
	}
	gdocs := yamlDocs(t, g)
	if len(gdocs) != 1 {
		t.Fatalf("%d objects, want the gather pod", len(gdocs))
	}
	var gp corev1.Pod
	decodeStrict(t, gdocs[0], &gp)
	if gp.Kind != "Pod" || len(gp.Spec.InitContainers) != 1 || len(gp.Spec.Containers) != 1 {
		t.Fatalf("gather: %s with %d init containers and %d containers", gp.Kind, len(gp.Spec.InitContainers), len(gp.Spec.Containers))
	}
	if ic := gp.Spec.InitContainers[0]; !slices.Equal(ic.Args, job.Gather) || ic.Image != job.Image {
		t.Errorf("gather runs %s %v, want %v", ic.Image, ic.Args, job.Gather)
	}
	for _, c := range append(gp.Spec.InitContainers, gp.Spec.Containers...) {
		checkSecurity(t, gp.Spec, c)
		checkStoreMount(t, gp.Spec, c, name)
	}
	if !selects(policy.Spec.PodSelector.MatchLabels, gp.Labels) {
		t.Errorf("the policy does not cover the gather pod (labels %v)", gp.Labels)
	}
}

// Jobs is the plan of s as a list.
func Jobs(s Suite) []suite.Job { return suite.Jobs(s.Plan.Cells, s.Runs) }

func checkSecurity(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	ps, cs := pod.SecurityContext, c.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != docker.RunnerUID ||
		ps.FSGroup == nil || *ps.FSGroup != docker.RunnerUID {
		t.Errorf("pod security %+v: want non-root, user and fsGroup %d", ps, docker.RunnerUID)
	}
	if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.Capabilities == nil ||
		!slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(cs.Capabilities.Add) != 0 {
		t.Errorf("container %s security %+v: want no escalation, every capability dropped", c.Name, cs)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod gets a service account token it has no use for")
	}
}

func checkStoreMount(t *testing.T, pod corev1.PodSpec, c corev1.Container, claim string) {
	t.Helper()
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != docker.RunnerStore {
		t.Errorf("container %s mounts %+v, want the store at %s", c.Name, c.VolumeMounts, docker.RunnerStore)
		return
	}
	for _, v := range pod.Volumes {
		if v.Name == c.VolumeMounts[0].Name {
			if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim {
				t.Errorf("volume %+v, want the claim %s", v, claim)
			}
			return
		}
	}
	t.Errorf("container %s mounts volume %s, which the pod lacks", c.Name, c.VolumeMounts[0].Name)
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// A job's tasks number 1 to the plays; the swarm tells each its slot
// through a template that says 0 for the first (whose slot the template
// alone would give as the node's id), and the arguments read it.
func TestNewJobAndSwarmArgs(t *testing.T) {
	t.Parallel()
	s := testSuite(t)
	plays := len(Jobs(s))
	for _, n := range []int{0, plays + 1} {
		if _, err := NewJob(s, "img", n); err == nil {
			t.Errorf("%d tasks for %d plays: no error", n, plays)
		}
	}
	job, err := NewJob(s, "img", plays)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"suite", "clock-jump", "partition-holder", "--runs", "2", "--seed", "7",
		"--backend", "local", "--shard", "env", "--store", Store}
	if !slices.Equal(job.Args, want) {
		t.Errorf("args %v, want %v", job.Args, want)
	}
	if g := job.Gather; !slices.Equal(g[:3], []string{"fanout", "gather", Store}) || !slices.Equal(g[3:], want[1:7]) {
		t.Errorf("gather %v", g)
	}
	env := SwarmEnv(job)
	if len(env) != 1 || env[0] != suite.ShardEnv+"="+docker.SwarmSlot+"/"+strconv.Itoa(plays) {
		t.Errorf("swarm env %v", env)
	}
	// On a swarm the tasks share the node's gate; the job's own
	// arguments (Kubernetes') are left as they were.
	if a := SwarmArgs(job); !slices.Equal(a, append(want, "--gate", SwarmGate)) || !slices.Equal(job.Args, want) {
		t.Errorf("swarm args %v (job's now %v), want the job's and --gate %s", a, job.Args, SwarmGate)
	}
}
