"""GRPO advantages for a judge trained in both orders: pure tensor functions.

Rows of a generation batch come in pair units (``j1.train.sampler``): G rollouts of one order of a
pair, then G of its other order. TRL normalises rewards per prompt (G rows); a judge that always
names the first-shown response then gets all-right groups in one order and all-wrong groups in the
other, zero variance everywhere and no signal. Over the pair (or per couple) the biased verdicts get
opposite signs in the two orders.
"""

from __future__ import annotations

import torch
from trl.trainer.utils import nanstd


def pair_advantages(
    rewards_per_func: torch.Tensor, weights: torch.Tensor, group: int, scale_rewards: str = "group"
) -> torch.Tensor:
    """GRPO advantages with one group per pair: rows ``[k*group, (k+1)*group)`` form group k.

    Same arithmetic as TRL's ``sum_then_normalize`` (weighted nansum over functions; a row where every
    function returned None is NaN, left out of the baseline and given advantage 0), only the group is
    the pair's 2G rollouts.

    Args:
        rewards_per_func: ``(N, F)`` rewards of all processes, pair units contiguous.
        weights: ``(F,)`` reward weights.
        group: rows per pair (2 x num_generations).
        scale_rewards: "group", "batch" or "none", as in GRPOConfig.

    Returns:
        ``(N,)`` advantages.

    >>> r = torch.tensor([[1.0], [1.0], [0.0], [0.0]])   # always "A": AB right, BA wrong
    >>> pair_advantages(r, torch.ones(1), 4, "none").tolist()
    [0.5, 0.5, -0.5, -0.5]
    """
    if rewards_per_func.shape[0] % group:
        raise ValueError(f"{rewards_per_func.shape[0]} rewards do not split into pair groups of {group}")
    unscorable = torch.isnan(rewards_per_func).all(dim=1)
    rewards = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    rewards[unscorable] = torch.nan
    grouped = rewards.view(-1, group)
    mean = torch.nanmean(grouped, dim=1).repeat_interleave(group)
    advantages = rewards - mean
    if scale_rewards == "group":
        advantages = advantages / (nanstd(grouped, dim=1).repeat_interleave(group) + 1e-4)
    elif scale_rewards == "batch":
        advantages = advantages / (nanstd(rewards) + 1e-4)
    elif scale_rewards != "none":
        raise ValueError(f"scale_rewards {scale_rewards!r}: choose group, batch or none")
    return torch.nan_to_num(advantages, nan=0.0)


def couple_advantages(
    rewards_per_func: torch.Tensor, weights: torch.Tensor, num_generations: int, scale_rewards: str = "group"
) -> torch.Tensor:
    """GRPO advantages with one group per couple: rollout k of a pair's first order with rollout k of
    its other order. Rows are laid out as ``pair_advantages`` expects (G rows of one order, then G of
    the other, pair after pair); each couple is normalised on its own (same arithmetic, group of 2).

    Why: a change of the judge that only moves its position preference (more "first shown" in both
    orders) gets exactly zero weight from a couple. If both rollouts name the first-shown response,
    one is right and one is wrong, so the letter is pushed up in one order and down in the other, by
    the same amount. A couple where both are right, or both wrong, gives no signal. Over the pair's
    2G rollouts this cancellation holds only on average. It is no restoring force: an update made in
    one context also moves the others, so the preference can still drift (``position_balance`` holds it).

    >>> r = torch.tensor([[1.0], [0.0], [0.0], [1.0]])   # AB: first, second; BA: first, second
    >>> couple_advantages(r, torch.ones(1), 2, "none").tolist()
    [0.5, -0.5, -0.5, 0.5]
    """
    group = 2 * num_generations
    n = rewards_per_func.shape[0]
    if n % group:
        raise ValueError(f"{n} rewards do not split into pair groups of {group}")
    # order[j] = the row that goes to place j: AB_0, BA_0, AB_1, BA_1, ... within each pair.
    device = rewards_per_func.device
    within = torch.arange(group, device=device).view(2, num_generations).t().reshape(-1)
    order = (torch.arange(0, n, group, device=device).unsqueeze(1) + within).reshape(-1)
    coupled = pair_advantages(rewards_per_func[order], weights, 2, scale_rewards)
    advantages = torch.empty_like(coupled)
    advantages[order] = coupled
    return advantages


def verdict_advantages(
    rewards_per_func: torch.Tensor, weights: torch.Tensor, valid: torch.Tensor | None, num_generations: int, *,
    couples: bool = False, scale_rewards: str = "group", invalid_advantage: float | None = None,
) -> torch.Tensor:
    """The advantages of ``J1GRPOTrainer`` (``advantage_groups`` pair or couple): over each pair's 2G
    rollouts (``pair_advantages``) or over its couples (``couple_advantages``).

    With ``invalid_advantage`` set, a rollout with no parseable verdict (``valid`` False) leaves its
    group's baseline and gets that advantage instead (e.g. -1). Why: with the paper's reward an
    invalid rollout scores 0 like a wrong one, so beside it any right verdict is above the mean, and
    the letter the judge already prefers is the one most often right in that spot: a format error
    then trains the position preference. The verdicts are compared among valid rollouts only; a
    valid rollout whose group has no other valid one gets 0. ``valid`` is read only then.

    >>> r = torch.tensor([[1.0], [0.0], [0.0], [0.0]])   # AB: right, invalid; BA: wrong, wrong
    >>> valid = torch.tensor([True, False, True, True])
    >>> verdict_advantages(r, torch.ones(1), valid, 2, couples=True, scale_rewards="none").tolist()
    [0.5, 0.0, -0.5, 0.0]
    >>> verdict_advantages(r, torch.ones(1), valid, 2, couples=True, scale_rewards="none",
    ...                    invalid_advantage=-1.0).tolist()
    [0.5, -1.0, -0.5, 0.0]
    """
    if invalid_advantage is not None:
        if valid is None or valid.shape != rewards_per_func.shape[:1]:
            shape = None if valid is None else tuple(valid.shape)
            raise ValueError(f"invalid_advantage needs one validity flag per reward row: {shape} for "
                             f"{rewards_per_func.shape[0]} rows")
        valid = valid.to(rewards_per_func.device).bool()
        rewards_per_func = rewards_per_func.clone()
        rewards_per_func[~valid] = torch.nan  # out of the baseline, advantage 0 until set below
    if couples:
        advantages = couple_advantages(rewards_per_func, weights, num_generations, scale_rewards)
    else:
        advantages = pair_advantages(rewards_per_func, weights, 2 * num_generations, scale_rewards)
    if invalid_advantage is not None:
        advantages[~valid] = invalid_advantage
    return advantages


def position_balance_advantages(positions: torch.Tensor, strength: float) -> torch.Tensor:
    """An extra advantage that pulls the judge's position preference back to even.

    ``positions`` holds +1 (the verdict names the first-shown response), -1 (the second-shown) or 0
    (no position: invalid, tie, pointwise) for every rollout of a generation batch. Rollout i gets
    ``-strength * m_i * s_i``, where ``m_i`` is the mean position of the OTHER rollouts that name one
    (leave-one-out; 0 if there are none). So when most verdicts name the first-shown response, the
    ones that name it are pushed down and the others up, in proportion to the imbalance.

    Why: the paper's rewards, pair groups and couples are all flat along the position preference (a
    judge that names the first-shown response with probability q scores the same for every q when it
    does not read the content). Nothing pulls q back, so a small judge walks to 0 or 1, where the
    verdict's learning signal q(1 - q) vanishes. Leaving rollout i out of its own m_i makes m_i
    independent of s_i, so the expected update is the gradient of ``-strength/2 * (2q - 1)^2``: a
    restoring force along the position preference only, zero at q = 1/2, and none along the content
    (which verdict is right).

    >>> position_balance_advantages(torch.tensor([1.0, 1.0, 1.0, -1.0, 0.0]), 1.0).tolist()
    [-0.3333333432674408, -0.3333333432674408, -0.3333333432674408, 1.0, 0.0]
    """
    if strength < 0:
        raise ValueError(f"position balance strength {strength}: must be >= 0")
    positions = positions.float()
    named = (positions != 0).float()
    others = named.sum() - named  # how many other rollouts name a position
    others_mean = torch.where(others > 0, (positions.sum() - positions) / others.clamp(min=1), 0.0)
    return torch.where(named > 0, -strength * others_mean * positions, 0.0)
