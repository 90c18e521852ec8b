"""``grade --jobs`` by default: the CPUs the process may use (``autograder/cpus.py``), on cgroup
trees laid out as the kernel shows them."""

from __future__ import annotations

from autograder.cpus import usable_cpus


def write(folder, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def test_a_pods_quota_caps_the_affinity_and_a_parents_quota_counts_too(tmp_path):
    write(tmp_path / "kubepods" / "pod1", {"cpu.max": "max 100000\n"})
    write(tmp_path / "kubepods", {"cpu.max": "250000 100000\n"})  # 2.5 CPUs for every pod below
    assert usable_cpus(affinity=set(range(32)), cgroup="0::/kubepods/pod1\n", cgroup_root=tmp_path) == 3
    assert usable_cpus(affinity={0}, cgroup="0::/kubepods/pod1\n", cgroup_root=tmp_path) == 1


def test_cgroup_v1_reads_the_cpu_controllers_own_tree(tmp_path):
    write(tmp_path / "cpu,cpuacct" / "job", {"cpu.cfs_quota_us": "400000\n", "cpu.cfs_period_us": "100000\n"})
    write(tmp_path / "cpu,cpuacct", {"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"})
    cgroup = "4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n"
    assert usable_cpus(affinity=set(range(16)), cgroup=cgroup, cgroup_root=tmp_path) == 4


def test_no_quota_leaves_the_affinity_and_nothing_readable_is_no_limit(tmp_path):
    write(tmp_path / "user.slice", {"cpu.max": "garbage\n"})
    assert usable_cpus(affinity={0, 1, 2, 3, 4, 5}, cgroup="0::/user.slice\n", cgroup_root=tmp_path) == 6
    assert usable_cpus(affinity=set(), cgroup="", cgroup_root=tmp_path / "missing") == 1
