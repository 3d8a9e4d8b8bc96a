from kindgi import Agent

helper_1 = Agent(id="acme.versions.helper", version="1.0.0", name="Helper", instructions="Be brief.")
helper_1_1 = Agent(id="acme.versions.helper", version="1.1.0", name="Helper", instructions="Be briefer.")
helper_again = Agent(id="acme.versions.helper", version="1.0.0", name="Helper", instructions="Again.")
