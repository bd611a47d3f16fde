"""The learner core on synthetic data (no environment): GAE against its definition, shard gradients
that sum to the whole minibatch's, deterministic updates per thread count, checkpoint bytes, the flat
Adam against torch's per-tensor Adam."""

import threading

import numpy as np
import torch

from policylab.learning import checkpoint, rollout, shards
from policylab.learning.network import ActorCritic
from policylab.learning.ppo import PPO, STATS, Settings

DIM, ACTIONS, T, N = 5, 3, 6, 8
SETTINGS = Settings(lr=1e-3, epochs=2, minibatch=16, clip=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)


def net(seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(DIM, ACTIONS, 8, 2, "tanh", np.zeros(DIM, np.float32), np.ones(DIM, np.float32))


def filled(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    bufs = rollout.buffers(T, N, DIM)
    bufs["obs"].copy_(torch.randn((T, N, DIM), generator=g))
    bufs["act"].copy_(torch.randint(0, ACTIONS, (T, N), generator=g))
    bufs["logp"].copy_(-torch.rand((T, N), generator=g) - 0.5)
    bufs["val"].copy_(torch.randn((T, N), generator=g))
    bufs["rew"].copy_(torch.randn((T, N), generator=g))
    bufs["end"].copy_((torch.rand((T, N), generator=g) < 0.2).float())
    return bufs


def test_gae_is_its_definition():
    bufs, gamma, lam = filled(), 0.9, 0.8
    next_v = torch.randn(N, generator=torch.Generator().manual_seed(1))
    rollout.gae(bufs, next_v, gamma, lam)
    for i in range(N):
        adv, nv = 0.0, float(next_v[i])
        for t in reversed(range(T)):
            keep = 1.0 - float(bufs["end"][t, i])
            delta = float(bufs["rew"][t, i]) + gamma * nv * keep - float(bufs["val"][t, i])
            adv = delta + gamma * lam * keep * adv
            assert abs(float(bufs["adv"][t, i]) - adv) < 1e-5
            nv = float(bufs["val"][t, i])
    assert torch.equal(bufs["ret"], bufs["adv"] + bufs["val"])


def test_sampled_actions_follow_the_logits():
    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1]])).repeat(20_000, 1)
    action, logp = rollout.sample(logits, torch.Generator().manual_seed(0))
    freq = np.bincount(action.numpy(), minlength=3) / action.numel()
    assert np.allclose(freq, [0.7, 0.2, 0.1], atol=0.01)
    assert torch.allclose(logp, torch.log(torch.tensor([0.7, 0.2, 0.1]))[action])


def test_chunk_gradients_on_replicas_sum_to_the_whole_minibatch_gradient():
    ppo = PPO(net(), SETTINGS, shards.Threads(3), seed=0)
    bufs = filled()
    rollout.gae(bufs, torch.zeros(N), 0.99, 0.95)
    batch = rollout.flatten(bufs)
    idx = torch.arange(16)
    adv = batch["adv"][idx]
    whole = ppo.chunk_grad(ppo.net, batch, idx, adv, 16)
    one = [q.grad.clone() for q in ppo.net.parameters()]
    cuts = (0, 5, 11, 16)
    parts = [ppo.chunk_grad(r, batch, idx[a:b], adv[a:b], 16) for r, a, b in zip(ppo.replicas, cuts, cuts[1:])]
    assert torch.allclose(sum(parts), whole, atol=1e-5)
    for k, _ in enumerate(ppo.net.parameters()):
        assert torch.allclose(sum(list(r.parameters())[k].grad for r in ppo.replicas), one[k], atol=1e-6)


def test_updates_repeat_per_thread_count_and_checkpoints_repeat_their_bytes():
    shards.deterministic_torch()

    def trained(threads: int) -> tuple[PPO, torch.Tensor]:
        ppo = PPO(net(), SETTINGS, shards.Threads(threads), seed=3)
        bufs = filled()
        rollout.gae(bufs, torch.zeros(N), 0.99, 0.95)
        ppo.anneal(0.5)
        sums, count = ppo.update(rollout.flatten(bufs))
        assert count == SETTINGS.epochs * (T * N // SETTINGS.minibatch) and sums.shape == (len(STATS),)
        return ppo, sums

    for threads in (1, 2):
        (a, sa), (b, sb) = trained(threads), trained(threads)
        assert torch.equal(sa, sb)

        def state(p):
            return {"net": p.net.state_dict(), "opt": p.opt_state(), "gen": p.gen.get_state()}

        assert checkpoint.to_bytes(state(a)) == checkpoint.to_bytes(state(b))
        assert all(torch.equal(q, r) for rep in a.replicas for q, r in zip(rep.parameters(), a.net.parameters()))


def per_tensor_update(ppo: PPO, adam: torch.optim.Adam, batch: dict) -> None:
    """`PPO.update` as it was before `Flat`: each tensor's shard gradients stacked and summed, torch's
    clip_grad_norm_ and a per-tensor Adam over the network's own tensors (the reference `Flat` matches)."""
    s, mb, n = ppo.s, ppo.s.minibatch, len(ppo.replicas)
    cuts = [mb * k // n for k in range(n + 1)]
    for _ in range(s.epochs):
        order = torch.randperm(batch["act"].shape[0], generator=ppo.gen)
        for lo in range(0, order.numel() - mb + 1, mb):
            idx = order[lo : lo + mb]
            adv = batch["adv"][idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            for r, a, b in zip(ppo.replicas, cuts, cuts[1:]):
                ppo.chunk_grad(r, batch, idx[a:b], adv[a:b], mb)
            for q, *gs in zip(ppo.net.parameters(), *[[q.grad for q in r.parameters()] for r in ppo.replicas]):
                q.grad = torch.stack(gs).sum(0) if len(gs) > 1 else gs[0]
            torch.nn.utils.clip_grad_norm_(ppo.net.parameters(), s.max_grad_norm)
            adam.step()
            with torch.no_grad():
                for r in ppo.replicas[1:]:
                    for q, m in zip(r.parameters(), ppo.net.parameters()):
                        q.copy_(m)


def test_flat_adam_gives_the_bytes_of_torchs_per_tensor_adam_and_its_checkpoint_format():
    """Same parameters, same Adam state and the same checkpoint bytes as the per-tensor update, over two
    updates with a resume between them (the checkpoint keeps the per-tensor format both ways)."""
    shards.deterministic_torch()
    settings = Settings(lr=3e-3, epochs=2, minibatch=12, clip=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.3)
    for threads in (1, 2, 3):
        flat, ref = PPO(net(1), settings, shards.Threads(threads), 5), PPO(net(1), settings, shards.Threads(threads), 5)
        adam = torch.optim.Adam(ref.net.parameters(), lr=settings.lr, eps=1e-5)
        for k in range(2):
            bufs = filled(k)
            rollout.gae(bufs, torch.zeros(N), 0.99, 0.95)
            flat.update(rollout.flatten(bufs))
            per_tensor_update(ref, adam, rollout.flatten(bufs))
            params = [q.detach() for q in flat.net.parameters()]
            assert all(torch.equal(q, r) for q, r in zip(params, ref.net.parameters())), (threads, k)
            assert checkpoint.to_bytes(flat.opt_state()) == checkpoint.to_bytes(adam.state_dict()), (threads, k)
            resumed = PPO(net(2), settings, shards.Threads(threads), 0)
            resumed.load_state(flat.net.state_dict(), adam.state_dict(), flat.gen.get_state())
            flat = resumed


def test_a_checkpoint_reads_back_what_was_written(tmp_path):
    ppo = PPO(net(), SETTINGS, shards.Threads(1), seed=0)
    path = tmp_path / "ckpt.pt"
    checkpoint.write(path, {"net": ppo.net.state_dict(), "arr": np.arange(3)})
    back = checkpoint.read(path)
    assert np.array_equal(back["arr"], np.arange(3))
    assert all(torch.equal(back["net"][k], v) for k, v in ppo.net.state_dict().items())


def test_threads_return_results_in_item_order_and_shards_split_evenly():
    assert shards.Threads(3).map(lambda a, b: a * b, [(1, 2), (3, 4), (5, 6)]) == [2, 12, 30]
    assert shards.sizes(10, 3) == [4, 3, 3]
    assert len(set(shards.seeds(0, 4))) == 4 and shards.seeds(0, 2) != shards.seeds(1, 2)


def test_item_k_always_runs_on_thread_k_of_the_learners_own():
    """Which thread runs which shard changes a run's last bits (MKL's per-thread state), so item k runs
    on thread k whatever the timing, and never on the caller's thread, whose last call is whatever ran
    before in the process. (A shared pool gave instant items to whichever thread was free.)"""
    for count in (1, 2, 3):
        threads = shards.Threads(count)
        seen = [threads.map(threading.get_ident, [()] * count) for _ in range(200)]
        assert all(s == seen[0] for s in seen), count
        assert len(set(seen[0])) == count and threading.get_ident() not in seen[0]
