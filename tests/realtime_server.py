"""A small full-duplex system behind a WebSocket, for the live client's tests (tests/sessions/test_live.py).

It speaks the live client's protocol (trace_eval/sessions/live.py): it accepts a declaration of 16 kHz mono
16-bit PCM in 20 ms frames and refuses any other; it hears the user's frames as they arrive, takes the user's
speech to have ended at the last frame louder than THRESHOLD_DBFS once HANGOVER_S of quieter frames followed, and
answers each user turn that ends while it is silent (found after HANGOVER_S of quiet, or `hangover_s`: an eager
system's 0.25 s; or, pause-aware, at the ends `turn_ends_s` it is told): a recorded prompt, `delay_s` after that
end, streamed in 20 ms frames at real-time pace; `log` holds when each answer started and stopped. Spoken over
(BARGE_IN_FRAMES loud frames in a row while it answers), it stops `stops_after_s` later, or talks on when that
is None. With `closes_after_s` it hangs up: that long after accepting the declaration, or at once on connecting
when negative. Only the path /talk is served; any other is answered 404.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http import HTTPStatus

import numpy as np
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

RATE = 16000
FRAME = RATE // 50  # 20 ms
DECLARATION = {"sample_rate": RATE, "channels": 1, "frame_ms": 20, "format": "pcm_s16le"}
THRESHOLD_DBFS = -45.0  # the Asterisk prompts' quiet ends sit near -37 dBFS, their speech near -20
HANGOVER_S = 0.4  # longer than any silence inside the prompts used (at most 0.22 s)
BARGE_IN_FRAMES = 3  # 60 ms of loud frames while answering: the user speaks over the answer


class RealtimeServer:
    """`with RealtimeServer(answer, delay_s=0.8) as server:` serves at `server.url` from a thread of its own;
    `answer`: float samples at 16 kHz. After a session, `stopped_at`: the loop time it stopped answering
    because it was spoken over (None: it was not, or talked on)."""

    def __init__(
        self,
        answer: np.ndarray,
        delay_s: float = 0.8,
        stops_after_s: float | None = None,
        closes_after_s: float | None = None,
        hangover_s: float = HANGOVER_S,
        turn_ends_s: list[float] | None = None,
    ) -> None:
        assert delay_s >= hangover_s, "the answer is timed from the end it has found, which takes the hangover"
        pcm = (np.clip(answer, -1, 1) * 32767).round().astype("<i2")
        self.frames = [pcm[k : k + FRAME].tobytes() for k in range(0, len(pcm), FRAME)]
        self.delay_s, self.stops_after_s, self.closes_after_s = delay_s, stops_after_s, closes_after_s
        self.hangover_s, self.turn_ends_s = hangover_s, turn_ends_s
        self.stopped_at: float | None = None
        self.log: list[tuple[str, float]] = []  # ("answer" or "stop", seconds on the session clock)
        self.url = ""

    def __enter__(self) -> RealtimeServer:
        started = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(started),))
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the test server did not start within 10 s")
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._done.set)
        self._thread.join(10)
        self._loop.close()

    async def _serve(self, started: threading.Event) -> None:
        self._done = asyncio.Event()

        def only_talk(connection, request):
            if request.path != "/talk":
                return connection.respond(HTTPStatus.NOT_FOUND, "only /talk is served here\n")
            return None

        async with serve(self._session, "127.0.0.1", 0, process_request=only_talk, compression=None) as server:
            self.url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/talk"
            started.set()
            await self._done.wait()

    async def _session(self, ws) -> None:
        if self.closes_after_s is not None and self.closes_after_s < 0:
            await ws.close(1000, "closed on connecting")
            return
        declared = json.loads(await ws.recv())
        if declared != DECLARATION:
            await ws.send(json.dumps({"error": f"this system takes {DECLARATION}, not {declared}"}))
            await ws.close(1003, "unsupported audio format")
            return
        await ws.send(json.dumps({"event": "ready", "system": "realtime_server"}))
        loop = asyncio.get_running_loop()
        if self.closes_after_s is not None:
            loop.call_later(self.closes_after_s, lambda: asyncio.ensure_future(ws.close(1000, "the session is over")))
        last_loud: float | None = None
        answered: float | None = None  # the last loud frame of the turn answered last
        loud_run = 0
        answer: asyncio.Task | None = None
        told: list[asyncio.Task] = []
        self.zero: float | None = None
        self.stop_at: float | None = None
        self.speaking = False
        self.finished_at = loop.time()
        try:
            async for message in ws:
                if isinstance(message, str):
                    continue
                now = loop.time()
                if self.zero is None:  # the session clock's zero: the first frame is sent once its 20 ms played
                    self.zero = now - FRAME / RATE
                    for end in self.turn_ends_s or ():  # pause-aware: it knows where the user's turns end
                        told.append(asyncio.create_task(self._answer(ws, self.zero + end + self.delay_s)))
                frame = np.frombuffer(message, dtype="<i2").astype(np.float64) / 32768
                loud = 10 * np.log10(np.mean(frame**2) + 1e-12) > THRESHOLD_DBFS
                loud_run = loud_run + 1 if loud else 0
                if loud:
                    last_loud = now
                ended = last_loud is not None and last_loud != answered and now - last_loud >= self.hangover_s
                ended = ended and self.turn_ends_s is None
                # A turn that ended while it answered is not answered: it talked through it.
                if ended and (answer is None or (answer.done() and last_loud > self.finished_at)):
                    answered = last_loud
                    answer = asyncio.create_task(self._answer(ws, last_loud + self.delay_s))
                elif self.speaking and loud_run == BARGE_IN_FRAMES and self.stops_after_s is not None:
                    self.stop_at = now + self.stops_after_s
        finally:
            for task in [answer, *told]:
                if task is not None:
                    task.cancel()

    async def _answer(self, ws, start: float) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, start - loop.time()))
        self.stop_at = None
        self.log.append(("answer", start - (self.zero or 0.0)))
        for k, frame in enumerate(self.frames):
            # Paced from the start, so the frames go out at real-time pace however late one was sent.
            await asyncio.sleep(max(0.0, start + k * FRAME / RATE - loop.time()))
            if self.stop_at is not None and loop.time() >= self.stop_at:
                self.stopped_at = loop.time()
                self.log.append(("stop", self.stopped_at - (self.zero or 0.0)))
                break
            try:
                await ws.send(frame)
            except ConnectionClosed:
                break
            self.speaking = True
        self.speaking = False
        self.finished_at = loop.time()
