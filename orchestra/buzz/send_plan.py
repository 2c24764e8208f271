"""Content checks and recipient planning for `messages send` (buzz-cli.md §5.1 steps 1-3)."""

from typing import Any

from orchestra.buzz import validate
from orchestra.buzz.errors import user_error
from orchestra.buzz.mentions import (
    Ambiguous,
    Resolved,
    Unresolved,
    candidate_positions,
    code_mask,
    display_name,
    npub_uris,
    resolve_mentions,
)
from orchestra.nostr.keys import parse_pubkey

MAX_CONTENT_CHARS = 100_000
MAX_MENTIONS = 50


def check_content(content: str) -> None:
    if not content.strip():
        raise user_error("message content is empty")
    if len(content) > MAX_CONTENT_CHARS:
        raise user_error(f"message content is too long (max {MAX_CONTENT_CHARS} characters)")


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def explicit_identities(mentions: list[str], content: str) -> list[str]:
    """`--mention` values then inline `nostr:npub1…` URIs outside code, de-duplicated."""
    explicit = [validate.pubkey(value, "--mention") for value in mentions]
    for npub in npub_uris(content, code_mask(content)):
        try:
            explicit.append(parse_pubkey(npub))
        except ValueError:
            continue  # not a valid key: the URI stays plain text
    explicit = _unique(explicit)
    if len(explicit) > MAX_MENTIONS:
        raise user_error(f"too many mentions (max {MAX_MENTIONS})")
    return explicit


def needs_preflight(content: str, explicit: list[str]) -> bool:
    return bool(explicit) or bool(candidate_positions(content, code_mask(content)))


def plan_recipients(
    channel: str,
    content: str,
    explicit: list[str],
    members: dict[str, str],
    profiles: dict[str, dict[str, Any]],
) -> list[str]:
    """Recipients (`p` tags) in order, or a `user_error` naming the problem and the candidates.

    `members` maps pubkey → role; `profiles` maps pubkey → kind-0 content object.
    """
    labels = {pk: label for pk in members if (label := display_name(profiles.get(pk)))}
    resolutions = resolve_mentions(content, labels)
    if not explicit:
        for resolution in resolutions:
            if isinstance(resolution, Unresolved):
                raise user_error(
                    f"mention '{resolution.token}' does not match a current channel member; "
                    "retry with --mention <pubkey>"
                )
            if isinstance(resolution, Ambiguous):
                raise _ambiguous_error(resolution, profiles)
    resolved = [r.pubkey for r in resolutions if isinstance(r, Resolved)]
    recipients = _unique(explicit + resolved)
    missing = [pk for pk in recipients if pk not in members]
    if missing:
        raise user_error(
            f"mentioned pubkeys are not channel members: {', '.join(missing)}; "
            "add them with buzz channels add-member or remove the mention",
            details={
                "missing_member_pubkeys": missing,
                "add_member_command": (
                    f"buzz channels add-member --channel {channel} --pubkey <pubkey> "
                    "--role <member|bot>"
                ),
            },
        )
    return recipients


def _ambiguous_error(resolution: Ambiguous, profiles: dict[str, dict[str, Any]]) -> Exception:
    candidates = []
    for pk in resolution.pubkeys:
        profile = profiles.get(pk) or {}
        about = profile.get("about")
        candidates.append(
            {
                "pubkey": pk,
                "name": display_name(profile),
                "about": about if isinstance(about, str) else None,
            }
        )
    return user_error(
        f"mention '@{resolution.name}' is ambiguous; candidates: {', '.join(resolution.pubkeys)}; "
        "retry with --mention <pubkey>",
        details={"candidates": candidates},
    )
