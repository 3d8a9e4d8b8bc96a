from kindgi import tool

SAYS = {"type": "object", "properties": {"says": {"type": "string", "description": "Grüße, 你好, 😀"}}}


@tool(id="acme.unicode.z\u00e4hlen", input={"type": "object"}, output=SAYS)
def zaehlen(input):
    """Zählt — bis «drei».

    Die Beschreibung kommt aus dem Docstring:
        eingerückt bleibt eingerückt,
    	Tabulatoren werden Leerzeichen.
    """
    return {"says": "eins, zwei, drei"}


@tool(id="acme.unicode.\U0001f600", description="Smile 😀 (an id beyond the BMP).",
      input={"type": "object"}, output=SAYS)
def smile(input):
    return {"says": "😀"}


@tool(id="acme.unicode.\uff21", description="Ａ fullwidth A: after 😀 in UTF-16, before it in code points.",
      input={"type": "object"}, output=SAYS)
def fullwidth(input):
    return {"says": "Ａ"}


@tool(id="acme.unicode.zeta", description="   Leading spaces of a description are kept.  ",
      input={"type": "object"}, output=SAYS)
def zeta(input):
    return {"says": "ζ"}


@tool(id="acme.unicode.one-line", input={"type": "object"}, output=SAYS)
def one_line(input):
    """   Eine Zeile, vorne gekürzt.   """
    return {"says": "eins"}
