from pydantic import BaseModel

from kindgi import Agent


class Answer(BaseModel):
    answer: str
    confidence: float = 0.5


typed = Agent(id="acme.typed.agent", version="1.0.0", name="Typed", instructions="Answer.", output=Answer)
wrapped = Agent(id="acme.typed.wrapped", version="1.0.0", name="Wrapped", instructions="Answer.",
                output={"schema": Answer, "name": "answer", "maxRepairs": 2})
