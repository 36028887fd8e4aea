package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.parser.ParserInterface

abstract class SparkAggRow extends VariantGetter

abstract class RewritingParser(protected val delegate: ParserInterface) extends RoutineParamForwarding
