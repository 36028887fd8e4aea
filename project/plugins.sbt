// scalafmt: `make lint` checks the formatting of the Scala sources and build files (.scalafmt.conf).
addSbtPlugin("org.scalameta" % "sbt-scalafmt" % "2.5.6")
