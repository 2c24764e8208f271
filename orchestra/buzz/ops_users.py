"""`users get|set-profile` (buzz-cli.md §7)."""

import json
import time
from typing import Any

from orchestra.buzz import validate
from orchestra.buzz.errors import user_error
from orchestra.buzz.lookups import Lookups
from orchestra.buzz.mentions import display_name
from orchestra.buzz.ops_messages import ok_message
from orchestra.buzz.rows import profile_content, profile_row
from orchestra.nostr.kinds import Kind

MAX_PUBKEYS = 200
NAME_SEARCH_CAP = 20_000


class UsersOps(Lookups):
    async def users_get(
        self,
        pubkey: list[str] | None = None,
        name: str | None = None,
        exact: bool = False,
        limit: int = 50,
    ) -> list[dict[str, Any]]:
        if pubkey and name is not None:
            raise user_error("--pubkey and --name cannot be combined")
        if name is not None:
            return await self._users_by_name(
                name, exact, validate.integer_in_range("--limit", limit, 1)
            )
        wanted = list(
            dict.fromkeys(validate.pubkey(pk, "--pubkey") for pk in pubkey or [self.pubkey])
        )
        if len(wanted) > MAX_PUBKEYS:
            raise user_error(f"too many --pubkey values (max {MAX_PUBKEYS})")
        profiles = await self.profile_events(wanted)
        return [profile_row(pk, profiles.get(pk)) for pk in wanted]

    async def _users_by_name(self, name: str, exact: bool, limit: int) -> list[dict[str, Any]]:
        events, capped = await self.paged_query({"kinds": [Kind.PROFILE]}, NAME_SEARCH_CAP)
        if capped:
            self.warn(
                "profiles_capped",
                f"name search read only the newest {NAME_SEARCH_CAP} profiles",
            )
        needle = name.lower()
        matches = []
        for event in events:
            label = display_name(profile_content(event))
            if label is not None and (
                label.lower() == needle if exact else needle in label.lower()
            ):
                matches.append((label.lower(), event["pubkey"], event))
        matches.sort(key=lambda match: (match[0], match[1]))
        return [profile_row(pk, event) for _, pk, event in matches[:limit]]

    async def users_set_profile(
        self,
        name: str | None = None,
        display_name: str | None = None,
        about: str | None = None,
        picture: str | None = None,
        bot: bool | None = None,
    ) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
            if display_name is None:
                changes["display_name"] = name
        for key, value in (("display_name", display_name), ("about", about), ("picture", picture)):
            if value is not None:
                changes[key] = value
        if bot is not None:
            changes["bot"] = bot
        if not changes:
            raise user_error(
                "nothing to change: give --name, --display-name, --about, --picture, --bot or --no-bot"
            )
        current = (await self.profile_events([self.pubkey])).get(self.pubkey)
        profile = {**profile_content(current), **changes}
        created_at = int(time.time())
        if current is not None:
            created_at = max(created_at, current["created_at"] + 1)
        content = json.dumps(profile, ensure_ascii=False, separators=(",", ":"))
        result = await self.publish(Kind.PROFILE, content, [], created_at=created_at)
        return {
            "event_id": result["event_id"],
            "accepted": True,
            "message": ok_message(result["message"]),
            "pubkey": self.pubkey,
            "profile": profile,
        }
