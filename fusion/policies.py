"""The fusion policies of DESIGN.md, exactly as written there. Pure functions."""
from __future__ import annotations

from .labels import is_winner, rating_min
from .registry import register


@register("content-first", "TRACE paper Algorithm 1: first winner among Content, Paralinguistics, Voice Quality; else Content")
def content_first(content: str, voice_quality: str, paralinguistics: str) -> str:
    for label in (content, paralinguistics, voice_quality):
        if is_winner(label):
            return label
    return content


@register("content-first-strict", "TRACE release (lenient cap): both_bad when Content and Paralinguistics are both both_bad; else content-first")
def content_first_strict(content: str, voice_quality: str, paralinguistics: str) -> str:
    if content == "both_bad" and paralinguistics == "both_bad":
        return "both_bad"
    return content_first(content, voice_quality, paralinguistics)


@register("cap", "TRACE paper Algorithm 2: first winner among C, P, VQ capped by RatingMin(C, P); else RatingMin(C, cap)")
def acceptability_cap(content: str, voice_quality: str, paralinguistics: str) -> str:
    cap = rating_min(content, paralinguistics)
    for label in (content, paralinguistics, voice_quality):
        if is_winner(label):
            return rating_min(label, cap)
    return rating_min(content, cap)


@register("vote", "Majority: the label at least two of C, VQ, P share; with no majority, Content")
def majority_vote(content: str, voice_quality: str, paralinguistics: str) -> str:
    if content in (voice_quality, paralinguistics):
        return content
    if voice_quality == paralinguistics:
        return voice_quality
    return content
