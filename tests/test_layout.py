"""Tests mirror the package: policylab/a/b.py is tested in tests/a/test_b.py, or the map below names the
test module that exercises it (one test often covers several modules through the command that joins
them) and says how. A new module needs one or the other; an entry for a module that gained its own test
module, or that no longer exists, fails too."""

from __future__ import annotations

import re

from tests.support.paths import ROOT

IMPORTS = "imports it"  # the named test module imports the module and calls it directly

TESTED_IN = {
    "cli/__main__.py": ("studies/breakout/search/test_train.py", "runs `python -m policylab.cli breakout train`"),
    "cli/boundary.py": ("studies/boundary/test_requests.py", IMPORTS),
    "cli/breakout.py": ("studies/breakout/test_requests.py", IMPORTS),
    "cli/command.py": ("cli/test_help_options.py", "every command's options are built from its request model"),
    "cli/lava_leap.py": ("studies/lava_leap/test_run_outputs.py", "runs `policylab lava-leap run`"),
    "cli/store.py": ("rollout/test_store_check.py", "runs `policylab store check`"),
    "cli/top.py": ("cli/test_front_door.py", IMPORTS),
    "envs/breakout/ale_errors.py": ("envs/breakout/test_sb3.py", IMPORTS),
    "envs/breakout/contract.py": ("envs/breakout/rom/test_kernel.py", IMPORTS),
    "envs/breakout/net_obs.py": ("envs/breakout/test_shadow.py", IMPORTS),
    "envs/breakout/params.py": ("envs/breakout/physics/test_params.py", IMPORTS),
    "envs/breakout/physics/kernel.py": ("envs/breakout/physics/test_params.py", IMPORTS),
    "envs/breakout/physics/render.py": ("envs/breakout/test_shadow.py", "renders the physics presets' frames"),
    "envs/breakout/registration.py": ("envs/breakout/test_ale_api.py", IMPORTS),
    "envs/breakout/rom/render.py": ("envs/breakout/rom/test_kernel.py", IMPORTS),
    "envs/breakout/sb3_kernel.py": ("envs/breakout/test_sb3.py", IMPORTS),
    "envs/breakout/vector_kernel.py": ("envs/breakout/test_vector.py", "the vector env's kernel, byte-equal to ale-py"),
    "envs/robots/batch.py": ("envs/robots/test_kick.py", IMPORTS),
    "envs/robots/observation.py": ("envs/robots/test_trainer_terms.py", "the observation terms against the trainers'"),
    "envs/robots/robot.py": ("envs/robots/test_friction_reach.py", IMPORTS),
    "envs/robots/spec.py": ("envs/robots/test_robots.py", IMPORTS),
    "learning/checkpoint.py": ("learning/test_ppo.py", IMPORTS),
    "learning/learner.py": ("studies/boundary/test_go1_v4_training.py", IMPORTS),
    "learning/network.py": ("learning/test_ppo.py", IMPORTS),
    "learning/rollout.py": ("learning/test_ppo.py", IMPORTS),
    "learning/shards.py": ("learning/test_ppo.py", IMPORTS),
    "policies/breakout_net.py": ("cli/test_fuzz.py", IMPORTS),
    "policies/files.py": ("policies/test_mlp.py", IMPORTS),
    "report/browser.py": ("report/test_html.py", IMPORTS),
    "report/run_kinds.py": ("report/test_runs_index.py", IMPORTS),
    "rollout/export.py": ("studies/boundary/test_export.py", IMPORTS),
    "studies/boundary/analysis_folder.py": ("report/test_runs_index.py", "runs reduce and select into their folders"),
    "studies/boundary/ars.py": ("studies/boundary/test_ars_ant.py", IMPORTS),
    "studies/boundary/constants.py": ("studies/boundary/test_robot_policies.py", IMPORTS),
    "studies/boundary/gate.py": ("studies/boundary/test_onnx_gate.py", IMPORTS),
    "studies/boundary/learn/judge.py": ("studies/boundary/test_learn.py", IMPORTS),
    "studies/boundary/learn/learner.py": ("studies/boundary/test_learn.py", "runs `policylab boundary learn`"),
    "studies/boundary/learn/report.py": ("studies/boundary/test_learn.py", "checks the learn report"),
    "studies/boundary/learn/run.py": ("studies/boundary/test_go1_v4_training.py", IMPORTS),
    "studies/boundary/learn/worlds.py": ("studies/boundary/test_learn.py", IMPORTS),
    "studies/boundary/probe_server.py": ("studies/boundary/test_probe_guard.py", IMPORTS),
    "studies/boundary/probe_view.py": ("studies/boundary/test_grid_axes.py", IMPORTS),
    "studies/boundary/probe_worker.py": ("studies/boundary/test_probe.py", IMPORTS),
    "studies/boundary/protocol.py": ("envs/robots/test_robots.py", IMPORTS),
    "studies/boundary/records.py": ("studies/boundary/test_axes.py", IMPORTS),
    "studies/boundary/replay.py": ("studies/boundary/test_clips.py", IMPORTS),
    "studies/boundary/report.py": ("studies/boundary/test_report_honesty.py", IMPORTS),
    "studies/boundary/robot_card.py": ("envs/robots/test_friction_reach.py", IMPORTS),
    "studies/boundary/rrd.py": ("studies/boundary/test_clips.py", IMPORTS),
    "studies/boundary/select.py": ("studies/boundary/test_clips.py", IMPORTS),
    "studies/boundary/simulation.py": ("studies/boundary/test_axes.py", IMPORTS),
    "studies/boundary/sweep.py": ("studies/boundary/test_sweep_resume.py", IMPORTS),
    "studies/boundary/threshold_data.py": ("report/test_runs_index.py", "runs `policylab boundary calibrate`"),
    "studies/boundary/train.py": ("report/test_runs_index.py", "runs `policylab boundary train`"),
    "studies/breakout/audit/gaps.py": ("studies/breakout/audit/test_audit_conclusions.py", IMPORTS),
    "studies/breakout/audit/report.py": ("studies/breakout/audit/test_audit.py", "renders the audit page"),
    "studies/breakout/episodes/features.py": (
        "studies/breakout/episodes/test_network_policy.py",
        "the features a network sees",
    ),
    "studies/breakout/episodes/report.py": ("studies/breakout/episodes/test_eval.py", IMPORTS),
    "studies/breakout/episodes/runner.py": ("envs/breakout/test_ale.py", IMPORTS),
    "studies/breakout/episodes/video.py": (
        "studies/breakout/episodes/test_report_browser.py",
        "the eval's video, real and linked",
    ),
    "studies/breakout/fidelity/calibration/identify.py": (
        "studies/breakout/fidelity/calibration/test_identify_ball_logic.py",
        IMPORTS,
    ),
    "studies/breakout/fidelity/calibration/metrics.py": (
        "studies/breakout/fidelity/calibration/test_identify_ball_logic.py",
        IMPORTS,
    ),
    "studies/breakout/fidelity/calibration/report.py": (
        "studies/breakout/fidelity/calibration/test_calibrate.py",
        "renders the calibration page",
    ),
    "studies/breakout/fidelity/lockstep_report.py": (
        "studies/breakout/fidelity/test_lockstep.py",
        "renders the lockstep page",
    ),
    "studies/breakout/fidelity/trace.py": ("envs/breakout/rom/test_kernel.py", IMPORTS),
    "studies/breakout/learn/learner.py": ("studies/breakout/learn/test_learn.py", IMPORTS),
    "studies/breakout/learn/network.py": ("studies/breakout/learn/test_learn.py", IMPORTS),
    "studies/breakout/learn/plan.py": ("studies/breakout/learn/test_learn.py", IMPORTS),
    "studies/breakout/learn/report.py": ("studies/breakout/learn/test_learn.py", "renders the learn page"),
    "studies/breakout/options.py": ("studies/breakout/episodes/test_world_keys.py", IMPORTS),
    "studies/breakout/search/halving.py": (
        "studies/breakout/search/test_train.py",
        "the successive halving of `breakout train`",
    ),
    "studies/breakout/search/report.py": ("studies/breakout/search/test_train.py", "renders the training loop's page"),
    "studies/breakout/sizes.py": ("studies/breakout/episodes/test_network_policy.py", IMPORTS),
    "studies/lava_leap/agent.py": ("studies/lava_leap/test_learners.py", IMPORTS),
    "studies/lava_leap/charts.py": ("studies/lava_leap/test_run_outputs.py", "the charts of a run"),
    "studies/lava_leap/checks.py": ("studies/lava_leap/test_run_outputs.py", IMPORTS),
    "studies/lava_leap/config.py": ("rollout/test_ensure.py", IMPORTS),
    "studies/lava_leap/experiments.py": ("studies/lava_leap/test_run_outputs.py", "runs the experiments"),
    "studies/lava_leap/floor.py": ("studies/lava_leap/test_claims.py", IMPORTS),
    "studies/lava_leap/records.py": ("studies/lava_leap/test_resume.py", "the stored records a run resumes from"),
    "studies/lava_leap/report.py": ("cli/test_front_door.py", IMPORTS),
    "studies/lava_leap/requests.py": ("cli/test_fuzz.py", "the lava-leap options fuzzed"),
    "studies/lava_leap/runs.py": ("rollout/test_ensure.py", IMPORTS),
    "studies/lava_leap/simulate.py": ("studies/lava_leap/test_exact.py", IMPORTS),
    "studies/lava_leap/walkthrough.py": ("studies/lava_leap/test_run_outputs.py", "the GRPO walkthrough page"),
}


def _modules() -> list[str]:
    package = ROOT / "policylab"
    return sorted(
        str(f.relative_to(package))
        for f in package.rglob("*.py")
        if f.name != "__init__.py" and "__pycache__" not in f.parts
    )


def _mirror(module: str):
    path = ROOT / "tests" / module
    return path.with_name(f"test_{path.name}")


def test_every_module_has_its_test_module_or_names_the_one_that_tests_it():
    unmirrored = [m for m in _modules() if not _mirror(m).is_file()]
    assert [m for m in unmirrored if m not in TESTED_IN] == []
    assert [m for m in TESTED_IN if m not in unmirrored] == []  # stale: the module went or has its own tests


def test_each_named_test_module_exists_and_imports_what_it_is_said_to():
    for module, (test, how) in TESTED_IN.items():
        text = (ROOT / "tests" / test).read_text()
        if how != IMPORTS:
            continue
        dotted = "policylab." + module.removesuffix(".py").replace("/", ".")
        parent, name = dotted.rsplit(".", 1)
        pattern = rf"(from {re.escape(dotted)} import|import {re.escape(dotted)}\b|from {re.escape(parent)} import [^\n]*\b{name}\b)"
        assert re.search(pattern, text), (module, test)
