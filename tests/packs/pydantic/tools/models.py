import enum
from typing import Awaitable, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, computed_field
from typing_extensions import TypedDict

from kindgi import ToolContext, tool


class Colour(str, enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    post_code: str = Field(alias="postCode", pattern=r"^[0-9]{5}$")


class Person(BaseModel):
    """A person, with a docstring pydantic turns into a description."""

    name: str = Field(min_length=1, description="Full name")
    age: Optional[int] = Field(default=None, ge=0, le=150)
    home: Address
    others: List[Address] = []
    colour: Colour = Colour.RED
    tags: Dict[str, float] = {}
    kind: Literal["person"] = "person"


class Tree(BaseModel):
    label: str
    children: List["Tree"] = []


class Titled(BaseModel):
    model_config = ConfigDict(title="An Explicit Title")

    value: Union[int, str]


class Greeting(BaseModel):
    text: str
    shout: bool = False

    @computed_field
    @property
    def length(self) -> int:
        return len(self.text)


class Point(TypedDict):
    x: float
    y: float


@tool(id="acme.typed.greet", description="Greet a person.")
def greet(person: Person, ctx: ToolContext) -> Greeting:
    return Greeting(text="Hello, " + person.name)


@tool(id="acme.typed.tree", description="Count a tree's nodes.")
def tree(root: Tree) -> Dict[str, int]:
    return {"nodes": 1 + sum(tree(child)["nodes"] for child in root.children)}


@tool(id="acme.typed.titled", description="Echo a titled model.")
async def titled(value: Titled) -> Awaitable[Titled]:
    return value


@tool(id="acme.typed.point", description="A TypedDict input.")
def point(p: Point) -> List[float]:
    return [p["x"], p["y"]]
