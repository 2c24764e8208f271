"""Trial setup: identities, sandbox, channel, members, profiles, memories, agents (§7.2 steps 2-10)."""

from __future__ import annotations

import asyncio
import contextlib
import time

from orchestra.config.manifest import AgentSlot, ArtifactHashMismatch
from orchestra.jsonio import write_text_atomic
from orchestra.nostr.keys import Keys
from orchestra.trial import provision
from orchestra.trial.base import TrialBase
from orchestra.trial.errors import TrialError, classified
from orchestra.trial.eventlog import EventLogFollower
from orchestra.trial.identities import Identity, derive_fixture_keys, trial_user
from orchestra.trial.launch import agent_process_environment, oracle_registration
from orchestra.trial.observer import ChannelObserver
from orchestra.trial.prompts import TeamMember, compose_system_prompt

READINESS_SECONDS = 60.0


class TrialSetup(TrialBase):
    async def _setup(self) -> None:
        self._mint_identities()
        with classified("EnvironmentStartError"):
            await self.environment.prepare(self.task, with_solution=self.ctx.condition.uses_oracle)
        with classified("ProvisioningError"):
            await self._create_channel()
            await self._provision_members()
        with classified("FixtureSetupError"):
            await self._seed_memories()
        await self._launch_agents()
        await self._wait_ready()

    def _mint_identities(self) -> None:
        state = self.ctx.state
        self.agent_keys = {slot.agent_id: Keys.generate() for slot in self.slots}
        self.user = trial_user(
            owner_secret=state.owner.secret,
            user_secret=state.user.secret,
            short_name=self.task.short_name,
            user_display_name=self.task.fixture.user_display_name,
        )
        self.directory = [
            (
                entry,
                Identity(
                    entry.name, entry.role, derive_fixture_keys(state.owner.secret, entry.key)
                ),
            )
            for entry in self.task.fixture.directory_entries()
        ]
        self.buzz["user"] = {"name": self.user.name, "pubkey": self.user.pubkey}
        self.buzz["agents"] = [
            {
                "agent_id": slot.agent_id,
                "role": slot.role,
                "kind": slot.kind,
                "endpoint": slot.entry.endpoint,
                "pubkey": self.agent_keys[slot.agent_id].pubkey,
            }
            for slot in self.slots
        ]

    async def _create_channel(self) -> None:
        name = f"{self.task.short_name}-{self.trial_id[:8]}"
        description = (
            f"run={self.ctx.job_name} trial={self.trial_id} "
            f"manifest={self.ctx.condition.manifest_sha256}"
        )
        since = int(time.time()) - 5
        self.channel_id = await provision.create_trial_channel(
            self._user_client(), name=name, description=description
        )
        self.buzz["channel_id"], self.buzz["channel_name"] = self.channel_id, name
        self.recorder.log(f"channel {self.channel_id} ({name})")
        self.recorder.write()
        await self.ctx.registry.record_trial(
            run_id=self.ctx.job_name,
            trial_id=self.trial_id,
            manifest_hash=self.ctx.condition.manifest_sha256,
            task_name=self.task.name,
            channel_id=self.channel_id,
        )
        self.observer = ChannelObserver(self._user_client(), self.channel_id, since, self._notify)
        await self.observer.start()

    async def _provision_members(self) -> None:
        assert self.channel_id is not None and self.user is not None
        user_client = self._user_client()
        for slot in self.slots:
            pubkey = self.agent_keys[slot.agent_id].pubkey
            await provision.add_member(user_client, self.channel_id, pubkey, "member")
        profiles = [provision.Profile(self.user, None, self.ctx.stable_clients)]
        profiles += [
            provision.Profile(
                Identity(slot.agent_id, slot.kind, self.agent_keys[slot.agent_id]),
                None,
                self.trial_clients,
                fresh=True,
            )
            for slot in self.slots
        ]
        profiles += [
            provision.Profile(identity, entry.about, self.ctx.stable_clients)
            for entry, identity in self.directory
        ]
        published = await provision.publish_profiles(user_client, profiles)
        self.recorder.log(f"profiles: {published} published, {len(profiles) - published} current")
        for entry, identity in self.directory:
            if entry.channel_member:
                role = "bot" if entry.role == "bot" else "member"
                await provision.add_member(user_client, self.channel_id, identity.pubkey, role)

    async def _seed_memories(self) -> None:
        client = self._agent_client(self.orchestrator_id)
        for seed in self.task.fixture.memory_seeds:
            await provision.relay_operation(
                lambda seed=seed: client.mem_set(slug=seed.slug, value=seed.value)
            )

    # --- agents: steps 9-10 ---------------------------------------------------------------

    async def _register_oracle(self) -> int | None:
        """Register with the process's oracle server; its port, or None (no oracle)."""
        condition = self.ctx.condition
        if not condition.uses_oracle:
            return None
        assert self.channel_id is not None and self.user is not None
        with classified("AgentLaunchError"):
            server = await self.ctx.oracle.ensure(
                condition.endpoint_config.oracle_endpoint_names(),
                await self.environment.oracle_listen_address(),
            )
            env = self.environment.paths
            server.register(
                oracle_registration(
                    condition,
                    self.slots,
                    trial_id=self.trial_id,
                    channel_id=self.channel_id,
                    user=self.user,
                    env=env,
                    log_path=self.paths.oracle_log,
                    done_probe=self.environment.solve_done_probe(
                        env.solve_state_dir(self.channel_id)
                    ),
                )
            )
            self.oracle_registered = True
        return server.port

    async def _launch_agents(self) -> None:
        assert self.channel_id is not None and self.user is not None
        oracle_port = await self._register_oracle()
        team = [
            TeamMember(slot.agent_id, slot.role, self.agent_keys[slot.agent_id].pubkey)
            for slot in self.slots
        ]
        agent_seconds, _ = self.timeouts
        for slot, member in zip(self.slots, team, strict=True):
            with classified("ArtifactHashMismatch"):
                try:
                    prompt = compose_system_prompt(
                        slot.entry,
                        self.ctx.condition.artifact_root,
                        me=member,
                        team=team,
                        channel_id=self.channel_id,
                        user_name=self.user.name,
                        user_pubkey=self.user.pubkey,
                    )
                except ArtifactHashMismatch as error:
                    raise TrialError("ArtifactHashMismatch", str(error)) from error
            host_prompt = self.paths.system_prompt(slot.agent_id)
            write_text_atomic(host_prompt, prompt, mode=0o600)
            with classified("AgentLaunchError"):
                await self.environment.install_prompt(slot.agent_id, host_prompt)
                await self._start_agent(slot, oracle_port, agent_seconds)

    async def _start_agent(
        self, slot: AgentSlot, oracle_port: int | None, agent_seconds: float
    ) -> None:
        assert self.channel_id is not None
        env = agent_process_environment(
            self.ctx,
            slot,
            self.environment,
            trial_id=self.trial_id,
            keys=self.agent_keys[slot.agent_id],
            channel_id=self.channel_id,
            oracle_port=oracle_port,
            agent_seconds=agent_seconds,
        )
        follower = EventLogFollower(
            self.paths.events_log(slot.agent_id),
            on_change=self._notify_log,
            on_bad_line=lambda line, a=slot.agent_id: self.recorder.log(
                f"{a}: event log line is not a JSON object: {line}"
            ),
        )
        self.followers[slot.agent_id] = follower
        self.follow_tasks.append(
            asyncio.create_task(self.environment.follow_event_log(slot.agent_id, follower))
        )
        self.agents[slot.agent_id] = await self.environment.start_agent(
            slot.agent_id,
            env,
            self._notify_log,
            self.paths.stdout_log(slot.agent_id),
            self.paths.stderr_log(slot.agent_id),
        )
        self.recorder.log(f"started {slot.agent_id}")

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + READINESS_SECONDS
        while True:
            self._log_changed.clear()
            for agent in self.agents.values():
                if agent.exit_code is not None:
                    raise TrialError("AgentProcessExited", self._describe_exit(agent))
            pending = [
                agent_id
                for agent_id, follower in self.followers.items()
                if self.channel_id not in follower.state.subscribed_channels
            ]
            if not pending:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TrialError(
                    "AgentReadinessTimeout",
                    f"agents not subscribed within {READINESS_SECONDS:g} s: {', '.join(pending)}",
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._log_changed.wait(), remaining)
