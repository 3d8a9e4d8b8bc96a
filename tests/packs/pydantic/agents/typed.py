from pydantic import BaseModel, computed_field

from kindgi import Agent


class Answer(BaseModel):
    answer: str
    confidence: float = 0.5

    # In the model's serialization schema only: the output is described for validation.
    @computed_field
    @property
    def sure(self) -> bool:
        return self.confidence > 0.9


typed = Agent(id="acme.typed.agent", version="1.0.0", name="Typed", instructions="Answer.", output=Answer)
wrapped = Agent(id="acme.typed.wrapped", version="1.0.0", name="Wrapped", instructions="Answer.",
                output={"schema": Answer, "name": "answer", "maxRepairs": 2})
