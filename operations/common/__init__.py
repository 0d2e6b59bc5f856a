"""What every service's operations use: who acts, what an operation refuses, and running a change whose webhook
events are announced once it has committed."""
